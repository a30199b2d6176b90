package sinkrunner_test

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// Two runners write one ledger partition: a records its fence and marks
// an attempt in flight; b takes the partition over (its fence, then the
// delivery's success); a, a zombie by now, writes its in-flight mark
// once more, after b's entry. A restore from the changelog, by a third
// runner or by a when the partition comes back, must end with b's entry:
// a's late write carries a fence below the latest one before it.
func TestZombieLedgerWriteAfterOwnerIsSkipped(t *testing.T) {
	env := enginetest.New(t)
	ledger := env.Name("ledger")
	compact := "compact"
	env.CreateTopicConfigs(ledger, 1, map[string]*string{"cleanup.policy": &compact})
	cfg := env.Config("app", "a")
	ctx := context.Background()
	now := time.Now()
	open := func() *sinkrunner.Ledgers {
		t.Helper()
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
	fence := func(l *sinkrunner.Ledgers) int64 {
		t.Helper()
		g, err := l.Fence(ctx, ledger, 0)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	put := func(l *sinkrunner.Ledgers, key string, e sinkrunner.Entry) {
		t.Helper()
		if err := l.Put(ctx, ledger, 0, key, e); err != nil {
			t.Fatal(err)
		}
	}
	check := func(who string, l *sinkrunner.Ledgers, key string, want sinkrunner.State, inFlight bool) {
		t.Helper()
		e, err := l.Get(ledger, 0, key)
		if err != nil {
			t.Fatal(err)
		}
		if e.State != want || e.InFlight != inFlight {
			t.Errorf("%s: %s is %q (in flight %v), want %q (in flight %v)", who, key, e.State, e.InFlight, want, inFlight)
		}
	}
	inFlight := sinkrunner.Entry{State: sinkrunner.Pending, Attempts: 1, InFlight: true, First: now, Updated: now}
	succeeded := sinkrunner.Entry{State: sinkrunner.Succeeded, Attempts: 1, First: now, Updated: now}

	a := open()
	ga := fence(a)
	early := inFlight
	early.Fence = ga
	put(a, "k0", early) // before b's fence: a still owns the partition
	put(a, "k1", early)
	put(a, "k4", early)
	b := open()
	gb := fence(b)
	if gb <= ga {
		t.Fatalf("b's fence %d is not above a's %d", gb, ga)
	}
	done := succeeded
	done.Fence = gb
	put(b, "k1", done)
	parked := sinkrunner.Entry{State: sinkrunner.Unknown, Attempts: 1, First: now, Updated: now, Fence: gb}
	put(b, "k4", parked) // b found a's attempt in flight
	stale := inFlight
	stale.Fence = ga
	put(a, "k1", stale) // the zombie's late in-flight mark, after b's entry
	put(a, "k2", stale) // a key b never wrote
	late := succeeded
	late.Fence = ga
	put(a, "k4", late)                                     // the zombie's attempt returned
	if err := a.Delete(ctx, ledger, 0, "k4"); err != nil { // and expired at once in a's view
		t.Fatal(err)
	}

	c := open() // a restore from the changelog's start
	check("a restore from the start", c, "k0", sinkrunner.Pending, true)
	check("a restore from the start", c, "k1", sinkrunner.Succeeded, false)
	check("a restore from the start", c, "k2", "", false)
	check("a restore from the start", c, "k4", sinkrunner.Unknown, false)

	// b restores onto its own state (from the position it recorded): the
	// fence it kept in Pebble is where the rule starts.
	if _, err := b.Restore(ctx, ledger, 0); err != nil {
		t.Fatal(err)
	}
	check("b, onto its own state", b, "k1", sinkrunner.Succeeded, false)
	check("b, onto its own state", b, "k2", "", false)
	check("b, onto its own state", b, "k4", sinkrunner.Unknown, false)

	n, err := a.Restore(ctx, ledger, 0) // the partition came back to a
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("a's restore skipped %d stale entries, want 4", n)
	}
	check("a, the partition back", a, "k0", sinkrunner.Pending, true)
	check("a, the partition back", a, "k1", sinkrunner.Succeeded, false)
	check("a, the partition back", a, "k2", "", false)
	check("a, the partition back", a, "k4", sinkrunner.Unknown, false)

	// e takes the partition over: it writes again the keys whose latest
	// record is a zombie's, so the changelog as compaction leaves it (the
	// latest record of each key, older fence records gone) folds to the
	// same ledger.
	e, err := sinkrunner.OpenLedgers(cfg.Client, cfg.Timeouts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if _, err := e.TakeOver(ctx, ledger, 0); err != nil {
		t.Fatal(err)
	}
	compacted := map[string]kafka.ChangelogRecord{}
	err = kafka.NewChangelogReader(cfg.Client, cfg.Timeouts.WithDefaults().Transaction).Read(ctx, ledger, 0, 0,
		func(batch []kafka.ChangelogRecord, _ int64) error {
			for _, r := range batch {
				compacted[string(r.Key)] = r
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	recs := slices.SortedFunc(maps.Values(compacted), func(a, b kafka.ChangelogRecord) int { return cmp.Compare(a.Offset, b.Offset) })
	var f sinkrunner.Fold
	folded := map[string]sinkrunner.Entry{}
	for _, r := range recs {
		cur := func() (sinkrunner.Entry, bool, error) { e, ok := folded[string(r.Key)]; return e, ok, nil }
		if !f.Admit(r.Offset, r.Key, r.Value, cur) {
			continue
		}
		if r.Value == nil {
			delete(folded, string(r.Key))
			continue
		}
		e, err := sinkrunner.DecodeEntry(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		folded[string(r.Key)] = e
	}
	for k, want := range map[string]sinkrunner.State{"k0": sinkrunner.Pending, "k1": sinkrunner.Succeeded, "k2": "", "k4": sinkrunner.Unknown} {
		if got := folded[k].State; got != want {
			t.Errorf("the changelog compacted after e took over: %s is %q, want %q", k, got, want)
		}
	}

	// An entry without a fence (written before entries carried one) is
	// applied as before.
	put(a, "k3", succeeded)
	d := open()
	check("an entry without a fence", d, "k3", sinkrunner.Succeeded, false)
}
