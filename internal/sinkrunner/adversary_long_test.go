//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package sinkrunner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
	"github.com/onceflow/onceflow/sinks"
)

// End to end on the embedded broker: the ledger write that records an
// attempt as out (written before each attempt to a sink that is not
// idempotent) is held, as by a slow changelog, while the runner's
// heartbeats stop reaching the coordinator. The group evicts the runner
// and another takes the partition over and delivers the request. When the
// held write returns, the evicted runner has had no heartbeat or commit
// confirmed for far more than half the session timeout: it must not make
// the attempt it had recorded.
func TestAdversaryLedgerWriteHeldPastProof(t *testing.T) {
	t.Parallel() // mostly waits out session timeouts; each test has a broker of its own
	env := enginetest.New(t)
	const n = 20
	app, in := filledOutbox(t, env, "fence", &effectSink{}, n)

	e := &effects{per: map[string]int{}, by: map[string]int{}}
	proxy := testproxy.New()
	t.Cleanup(proxy.Close) // after the runners have stopped
	tune := evictionTuning(proxy, 0)
	// The fifth request's attempt is recorded as out; that ledger write
	// holds until released.
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
	healAtEnd(t, proxy)
	select {
	case <-holding:
	case <-time.After(60 * time.Second):
		t.Fatal("runner a never recorded the fifth attempt")
	}
	proxy.Blackhole(12) // Heartbeat: the coordinator hears nothing more from a's membership
	startRunnerWith(t, env, app, "b", hookTopology(in, &effectSink{e: e, name: "b"}), tune(false), nil)
	waitFor(t, "every request delivered by b", 90*time.Second, func() bool {
		per, _ := e.counts()
		return len(per) >= n
	})
	close(release)
	deadline := time.Now().Add(5 * time.Second) // room for what a zombie would do next
	for time.Now().Before(deadline) {
		if per, _ := e.counts(); per[held] > 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	per, by := e.counts()
	t.Logf("effects by runner %v; %s applied %d times", by, strings.TrimPrefix(held, "hook:"), per[held])
	if per[held] > 1 {
		t.Errorf("request %s applied %d times at a downstream that is not idempotent: the evicted runner made the attempt once its held ledger write returned", held, per[held])
	}
}

// holdingSink is a downstream that is not idempotent whose n-th attempt
// waits for release and then fails as 503 (not applied); every other
// attempt is applied.
type holdingSink struct {
	e       *effects
	name    string
	n       int
	calls   int
	key     string
	holding chan struct{}
	release chan struct{}
}

func (s *holdingSink) Idempotent() bool { return false }

func (s *holdingSink) Deliver(_ context.Context, d sinks.Delivery) error {
	s.e.mu.Lock()
	s.calls++
	held := s.calls == s.n
	if held {
		s.key = d.IdempotencyKey
	}
	s.e.mu.Unlock()
	if held {
		close(s.holding)
		<-s.release
		return sinks.TransientError(errors.New("503 unavailable"), 0)
	}
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.e.per[d.IdempotencyKey]++
	s.e.by[s.name]++
	return nil
}

// End to end on the embedded broker: an attempt of runner a is out when
// a's heartbeats stop reaching the coordinator; runner b takes the
// partition over, finds the attempt recorded as out and parks the
// delivery as unknown, and commits past it. Then a's attempt fails as not
// applied. The evicted runner must not write its retry state over b's:
// a ledger that says pending for a request whose outbox offset is
// committed hides it (no runner reads it again, none lists it as unknown)
// and the request is never delivered.
func TestAdversaryEvictedRunnerLedgerWriteAfterTakeover(t *testing.T) {
	t.Parallel() // mostly waits out session timeouts; each test has a broker of its own
	env := enginetest.New(t)
	const n = 20
	app, in := filledOutbox(t, env, "fence", &effectSink{}, n)
	outbox := app + "-sink-hook"

	e := &effects{per: map[string]int{}, by: map[string]int{}}
	proxy := testproxy.New()
	t.Cleanup(proxy.Close) // after the runners have stopped
	tune := evictionTuning(proxy, 0)
	zombie := &holdingSink{e: e, name: "a", n: 5, holding: make(chan struct{}), release: make(chan struct{})}
	startRunnerWith(t, env, app, "a", hookTopology(in, zombie), tune(true), nil)
	healAtEnd(t, proxy)
	select {
	case <-zombie.holding:
	case <-time.After(60 * time.Second):
		t.Fatal("runner a never made its fifth attempt")
	}
	proxy.Blackhole(12) // Heartbeat: the coordinator hears nothing more from a's membership
	startRunnerWith(t, env, app, "b", hookTopology(in, &effectSink{e: e, name: "b"}), tune(false), nil)
	waitFor(t, "b to settle every request", 90*time.Second, func() bool { return committedSum(env, app+"-sinks", outbox) == n })
	e.mu.Lock()
	held := zombie.key
	e.mu.Unlock()
	ledger := func() (last sinkrunner.Entry, writes int) {
		for _, r := range env.Read(outbox + "-ledger-changelog") {
			if string(r.Key) != held {
				continue
			}
			en, err := sinkrunner.DecodeEntry(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			last, writes = en, writes+1
		}
		return last, writes
	}
	parked, before := ledger()
	if parked.State != sinkrunner.Unknown {
		t.Fatalf("b left %s in state %s, want it parked as unknown (the test's premise)", held, parked.State)
	}
	close(zombie.release)
	deadline := time.Now().Add(5 * time.Second) // room for what a zombie would do next
	for time.Now().Before(deadline) {
		if _, w := ledger(); w > before {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	last, after := ledger()
	t.Logf("%s: %d ledger writes when b had parked it, %d after a's attempt failed; last state %s (attempts %d, in flight %v)",
		held, before, after, last.State, last.Attempts, last.InFlight)
	if last.State != sinkrunner.Unknown {
		t.Errorf("the evicted runner overwrote b's unknown entry of %s with %s: the request, its outbox offset committed, is now neither delivered nor listed as unknown", held, last.State)
	}
}
