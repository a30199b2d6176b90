package sinkrunner_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// countingSink applies every delivery and counts calls per idempotency
// key.
type countingSink struct {
	mu    sync.Mutex
	calls map[string]int
}

func newCountingSink() *countingSink { return &countingSink{calls: map[string]int{}} }

func (s *countingSink) Deliver(_ context.Context, d sinks.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[d.IdempotencyKey]++
	return nil
}

func (s *countingSink) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	enginetest.WaitFor(t, what, within, ok)
}

// The runner deletes outbox records below the offsets it committed, once
// the purge interval has passed, and never past a committed offset.
func TestOutboxPurgedBelowCommittedOffsets(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("shop"), env.Name("orders")
	outbox := app + "-sink-hook"
	env.CreateTopic(in, 2)
	hook := newCountingSink()
	tp := topology.New("shop")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()

	clock := &fakeClock{}
	rn := startRunnerWith(t, env, app, "r1", tp, func(c *sinkrunner.Config) { c.Now = clock.now }, nil)
	env.Produce(in, 0, 200)
	delivered := func(n int) func() bool { return func() bool { return len(hook.snapshot()) >= n } }
	waitFor(t, "200 deliveries", 60*time.Second, delivered(200))
	committed := func(n int64) func() bool {
		return func() bool {
			var sum int64
			for _, o := range env.CommittedOffsets(app+"-sinks", outbox) {
				sum += o
			}
			return sum >= n
		}
	}
	waitFor(t, "outbox offsets committed", 30*time.Second, committed(200))
	time.Sleep(200 * time.Millisecond) // commits go on; no purge may come of them
	for p, start := range env.StartOffsets(outbox) {
		if start != 0 {
			t.Errorf("partition %d purged below %d before the purge interval passed", p, start)
		}
	}
	if n := rn.r.Purges(); n != 0 {
		t.Errorf("%d purges before the purge interval passed, want none", n)
	}

	clock.advance(sinkrunner.DefaultPurgeInterval + time.Second)
	env.Produce(in, 200, 200)
	waitFor(t, "400 deliveries", 60*time.Second, delivered(400))
	waitFor(t, "purge of the outbox", 30*time.Second, func() bool {
		var sum int64
		for _, o := range env.StartOffsets(outbox) {
			sum += o
		}
		return sum >= 200
	})
	got := env.CommittedOffsets(app+"-sinks", outbox)
	for p, start := range env.StartOffsets(outbox) {
		if start > got[p] {
			t.Errorf("partition %d purged below %d, past its committed offset %d", p, start, got[p])
		}
	}
	if n := rn.r.Purges(); n != 1 {
		t.Errorf("%d purges after the clock passed one interval, want 1", n)
	}
	for k, n := range hook.snapshot() {
		if n != 1 {
			t.Errorf("%s delivered %d times, want 1", k, n)
		}
	}
}
