package sinkrunner_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// A runner that lost a ledger partition (a zombie) writes to its
// changelog once more, after the partition's new owner wrote entries of
// its own; later the partition comes back to it. Its restore must bring
// in the new owner's entries: a delivery the new owner settled is
// settled here too, never sent again.
func TestLedgerRestoreAfterAnotherWriter(t *testing.T) {
	env := enginetest.New(t)
	ledger := env.Name("ledger")
	compact := "compact"
	env.CreateTopicConfigs(ledger, 1, map[string]*string{"cleanup.policy": &compact})
	cfg := env.Config("app", "a")
	ctx := context.Background()
	now := time.Now()
	open := func() *sinkrunner.Ledgers {
		l, err := sinkrunner.OpenLedgers(cfg.Client, cfg.Timeouts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		if _, err := l.Restore(ctx, ledger, 0); err != nil {
			t.Fatal(err)
		}
		return l
	}
	put := func(l *sinkrunner.Ledgers, key string, e sinkrunner.Entry) {
		t.Helper()
		if err := l.Put(ctx, ledger, 0, key, e); err != nil {
			t.Fatal(err)
		}
	}
	succeeded := sinkrunner.Entry{State: sinkrunner.Succeeded, Attempts: 1, First: now, Updated: now}
	zombie := open()
	put(zombie, "k0", succeeded)
	owner := open() // the partition moved
	put(owner, "k1", succeeded)
	put(owner, "k2", succeeded)
	put(zombie, "k3", succeeded)                              // the zombie's late write, after the owner's
	if _, err := zombie.Restore(ctx, ledger, 0); err != nil { // the partition came back
		t.Fatal(err)
	}
	for _, k := range []string{"k0", "k1", "k2", "k3"} {
		e, err := zombie.Get(ledger, 0, k)
		if err != nil {
			t.Fatal(err)
		}
		if e.State != sinkrunner.Succeeded {
			t.Errorf("%s after the partition came back: %q, want succeeded (the restore skipped the other runner's entries)", k, e.State)
		}
	}
}
