//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package sinkrunner_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
)

// End to end on the embedded broker: a runner whose heartbeats stop
// reaching the coordinator (as a process stopped by SIGSTOP, or cut off
// by the network) is evicted while one attempt of its is held, and
// another runner takes the outbox partition over. When the held attempt
// returns, the evicted runner starts no further attempt: it has had no
// heartbeat or commit confirmed for over half the session timeout. A
// downstream that is not idempotent sees every request at most once.
func TestEvictedRunnerStartsNoAttempt(t *testing.T) {
	t.Parallel() // mostly waits out session timeouts; each test has a broker of its own
	env := enginetest.New(t)
	const n = 200
	app, in := filledOutbox(t, env, "fence", &effectSink{}, n)

	e := &effects{per: map[string]int{}, by: map[string]int{}}
	proxy := testproxy.New()
	t.Cleanup(proxy.Close) // after the runners have stopped
	tune := evictionTuning(proxy, 0)
	zombie := &effectSink{e: e, name: "a", stall: 5, hold: 14 * time.Second, held: make(chan struct{})}
	a := startRunnerWith(t, env, app, "a", hookTopology(in, zombie), tune(true), nil)
	healAtEnd(t, proxy)
	waitFor(t, "runner a delivering", 30*time.Second, func() bool { _, by := e.counts(); return by["a"] >= 4 })
	proxy.Blackhole(12) // Heartbeat: the coordinator hears nothing more from a's membership
	startRunnerWith(t, env, app, "b", hookTopology(in, &effectSink{e: e, name: "b"}), tune(false), nil)
	waitFor(t, "every request delivered", 90*time.Second, func() bool {
		per, _ := e.counts()
		return len(per) >= n-1 // the one a held may be parked by b as unknown
	})
	select {
	case <-zombie.held:
	case <-time.After(60 * time.Second):
		t.Fatal("runner a's held attempt never returned")
	}
	time.Sleep(3 * time.Second) // room for what a zombie would do next
	per, by := e.counts()
	twice := 0
	for _, c := range per {
		if c > 1 {
			twice++
		}
	}
	t.Logf("effects by runner %v, %d keys, %d applied twice", by, len(per), twice)
	if twice > 0 {
		t.Errorf("%d requests applied twice at a downstream that is not idempotent: the evicted runner kept delivering", twice)
	}
	if by["b"] == 0 {
		t.Errorf("runner b delivered nothing: the partition never moved (%v)", by)
	}
	_ = a
}
