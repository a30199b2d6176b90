//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package sinkrunner_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
)

// End to end on the embedded broker: runner a checks that it may start
// an attempt, then records the attempt as in flight (the sink is not
// idempotent), and that ledger write is slow: meanwhile a's heartbeats
// go dark, the group evicts a, and runner b, which never saw the mark,
// delivers the same request. When a's write returns, a must not send it:
// its generation was last proven more than half the session timeout ago.
func TestSlowInFlightMarkSendsNothingAfterEviction(t *testing.T) {
	t.Parallel() // mostly waits out session timeouts; each test has a broker of its own
	env := enginetest.New(t)
	const n = 40
	app, in := filledOutbox(t, env, "slowmark", &effectSink{}, n)

	e := &effects{per: map[string]int{}, by: map[string]int{}}
	proxy := testproxy.New()
	t.Cleanup(proxy.Close) // after the runners have stopped
	tune := evictionTuning(proxy, 0)
	victim := fmt.Sprintf("hook:%s/0/5", in)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := func(key string, en sinkrunner.Entry) error {
		if key == victim && en.InFlight {
			once.Do(func() { close(entered) })
			<-release
		}
		return nil
	}
	startRunnerWith(t, env, app, "a", hookTopology(in, &effectSink{e: e, name: "a"}), tune(true),
		func(r *sinkrunner.Runner) { r.FailLedgerWrites(slow) })
	healAtEnd(t, proxy)
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("runner a never recorded the victim as in flight")
	}
	proxy.Blackhole(12) // Heartbeat: the coordinator hears nothing more from a's membership
	startRunnerWith(t, env, app, "b", hookTopology(in, &effectSink{e: e, name: "b"}), tune(false), nil)
	waitFor(t, "runner b delivering the victim", 90*time.Second, func() bool {
		per, _ := e.counts()
		return per[victim] >= 1
	})
	close(release)
	waitFor(t, "every request delivered", 90*time.Second, func() bool { per, _ := e.counts(); return len(per) >= n })
	time.Sleep(2 * time.Second) // room for what runner a would send after its slow write
	per, by := e.counts()
	t.Logf("effects by runner %v, victim applied %d times", by, per[victim])
	if per[victim] != 1 {
		t.Errorf("the victim was applied %d times at a downstream that is not idempotent, want 1", per[victim])
	}
}
