//go:build long

package sinkrunner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
)

// End to end on the embedded broker: runner a's in-flight mark of the
// fifth request is held on its way to the ledger changelog while a's
// heartbeats stop reaching the coordinator. The group evicts a; b takes
// the partition over and delivers every request, the fifth included. Then
// a's held mark is released and lands in the changelog after b's
// success. A restore of the ledger (the next owner's, or sinks status)
// must say the fifth request succeeded, not that an attempt is still out.
func TestZombieInFlightMarkAfterOwnerSuccess(t *testing.T) {
	t.Parallel() // mostly waits out session timeouts; each test has a broker of its own
	env := enginetest.New(t)
	const n = 20
	app, in := filledOutbox(t, env, "stale", &effectSink{}, n)
	outbox := app + "-sink-hook"
	changelog := outbox + "-ledger-changelog"

	e := &effects{per: map[string]int{}, by: map[string]int{}}
	proxy := testproxy.New()
	defer proxy.Close()
	tune := evictionTuning(proxy, 0)
	held := fmt.Sprintf("hook:%s/0/4", in)
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(key string, en sinkrunner.Entry) error {
		if key == held && en.InFlight && en.State == sinkrunner.Pending {
			once.Do(func() {
				close(holding)
				<-release
			})
		}
		return nil
	}
	startRunnerWith(t, env, app, "a", hookTopology(in, &effectSink{e: e, name: "a"}), tune(true),
		func(r *sinkrunner.Runner) { r.FailLedgerWrites(hold) })
	select {
	case <-holding:
	case <-time.After(60 * time.Second):
		t.Fatal("runner a never recorded the fifth attempt")
	}
	proxy.Blackhole(12) // Heartbeat: the coordinator hears nothing more from a's membership
	startRunnerWith(t, env, app, "b", hookTopology(in, &effectSink{e: e, name: "b"}), tune(false), nil)
	waitFor(t, "b to settle every request", 90*time.Second, func() bool { return committedSum(env, app+"-sinks", outbox) == n })
	close(release)
	last := func() (en sinkrunner.Entry) {
		for _, r := range env.Read(changelog) {
			if string(r.Key) == held {
				var err error
				if en, err = sinkrunner.DecodeEntry(r.Value); err != nil {
					t.Fatal(err)
				}
			}
		}
		return en
	}
	waitFor(t, "a's held in-flight mark to land after b's entry", 30*time.Second, func() bool {
		en := last()
		return en.State == sinkrunner.Pending && en.InFlight
	})

	cfg := env.Config(app, "c")
	l, err := sinkrunner.OpenLedgers(cfg.Client, cfg.Timeouts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stale, err := l.Restore(context.Background(), changelog, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(changelog, 0, held)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after a restore: %s (in flight %v); %d stale entries skipped", held, got.State, got.InFlight, stale)
	if got.State != sinkrunner.Succeeded {
		t.Errorf("%s restored as %s (in flight %v), want succeeded: the evicted runner's in-flight mark, written after the owner's success, was applied", held, got.State, got.InFlight)
	}
}
