//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package sinkrunner_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
	"github.com/onceflow/onceflow/sinks"
)

// guarded is a downstream that is not idempotent and is shared by every
// runner, with a sinks.FenceGuard in front of its effects.
type guarded struct {
	guard   sinks.FenceGuard
	mu      sync.Mutex
	applied map[string]int         // effects per idempotency key
	by      map[string]int         // effects per runner
	fences  map[string]sinks.Fence // the fence each runner delivered with
	refused map[string][]string    // keys refused per runner
}

func newGuarded() *guarded {
	return &guarded{applied: map[string]int{}, by: map[string]int{}, fences: map[string]sinks.Fence{}, refused: map[string][]string{}}
}

func (g *guarded) snapshot() (by map[string]int, fences map[string]sinks.Fence, refused map[string][]string, twice int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	by, fences, refused = map[string]int{}, map[string]sinks.Fence{}, map[string][]string{}
	for k, v := range g.by {
		by[k] = v
	}
	for k, v := range g.fences {
		fences[k] = v
	}
	for k, v := range g.refused {
		refused[k] = append([]string(nil), v...)
	}
	for _, n := range g.applied {
		if n > 1 {
			twice++
		}
	}
	return by, fences, refused, twice
}

// guardedSink is one runner's way into a guarded downstream. Its
// stall-th attempt waits for release before it reaches the downstream,
// as an attempt of a runner whose process stopped mid-attempt.
type guardedSink struct {
	g       *guarded
	name    string
	stall   int
	release chan struct{}
	calls   int
	back    chan error // the stalled attempt's answer
}

func (s *guardedSink) Idempotent() bool { return false }

func (s *guardedSink) Deliver(_ context.Context, d sinks.Delivery) error {
	s.g.mu.Lock()
	s.calls++
	n := s.calls
	s.g.mu.Unlock()
	if n == s.stall {
		<-s.release
	}
	err := s.g.guard.Apply(d, func() error {
		s.g.mu.Lock()
		defer s.g.mu.Unlock()
		s.g.applied[d.IdempotencyKey]++
		s.g.by[s.name]++
		s.g.fences[s.name] = d.Fence
		return nil
	})
	if errors.Is(err, sinks.ErrFenced) {
		s.g.mu.Lock()
		s.g.refused[s.name] = append(s.g.refused[s.name], d.IdempotencyKey)
		s.g.mu.Unlock()
	}
	if n == s.stall {
		s.back <- err
	}
	return err
}

// End to end on the embedded broker: runner a is evicted (its heartbeats
// go dark) while one of its attempts is held, runner b takes the outbox
// partition over and delivers; then a's held attempt reaches the
// downstream. The downstream's FenceGuard refuses it (ErrFenced: a's
// fence is below b's), nothing is applied twice, and a records nothing
// for it.
func TestZombieLateDeliveryRefusedByFenceGuard(t *testing.T) {
	t.Parallel() // mostly waits out session timeouts; each test has a broker of its own
	env := enginetest.New(t)
	const n = 100
	app, in := filledOutbox(t, env, "guard", &guardedSink{}, n)

	down := newGuarded()
	proxy := testproxy.New()
	t.Cleanup(proxy.Close) // after the runners have stopped
	tune := evictionTuning(proxy, 2*time.Minute)
	zombie := &guardedSink{g: down, name: "a", stall: 5, release: make(chan struct{}), back: make(chan error, 1)}
	startRunnerWith(t, env, app, "a", hookTopology(in, zombie), tune(true), nil)
	healAtEnd(t, proxy)
	waitFor(t, "runner a delivering", 30*time.Second, func() bool { by, _, _, _ := down.snapshot(); return by["a"] >= 4 })
	proxy.Blackhole(12) // Heartbeat: the coordinator hears nothing more from a's membership
	startRunnerWith(t, env, app, "b", hookTopology(in, &guardedSink{g: down, name: "b"}), tune(false), nil)
	waitFor(t, "runner b delivering", 90*time.Second, func() bool { by, _, _, _ := down.snapshot(); return by["b"] >= 10 })
	close(zombie.release)
	var late error
	select {
	case late = <-zombie.back:
	case <-time.After(60 * time.Second):
		t.Fatal("runner a's held attempt never returned")
	}
	waitFor(t, "every other request delivered", 90*time.Second, func() bool {
		by, _, _, _ := down.snapshot()
		return by["a"]+by["b"] >= n-1
	})
	by, fences, refused, twice := down.snapshot()
	t.Logf("effects by runner %v, fences %v, refused %v, late attempt: %v", by, fences, refused, late)
	if !errors.Is(late, sinks.ErrFenced) {
		t.Errorf("runner a's late attempt: %v, want it refused with ErrFenced", late)
	}
	if fences["a"].Generation >= fences["b"].Generation {
		t.Errorf("runner a's fence %s is not below runner b's %s", fences["a"], fences["b"])
	}
	if twice > 0 || by["a"]+by["b"] > n {
		t.Errorf("%d keys applied twice, %d effects for %d requests", twice, by["a"]+by["b"], n)
	}
}
