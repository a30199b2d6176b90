package sinkrunner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// effects is a downstream that is not idempotent: it applies every
// request, and counts the effects per idempotency key and per runner.
type effects struct {
	mu  sync.Mutex
	per map[string]int
	by  map[string]int
}

// effectSink is one runner's way into effects; its stall-th delivery
// holds the attempt for hold first (0: none), as a runner whose process
// stopped mid-attempt.
type effectSink struct {
	e     *effects
	name  string
	stall int
	hold  time.Duration
	calls int
	held  chan struct{} // closed when the held attempt returns
}

func (s *effectSink) Idempotent() bool { return false }

func (s *effectSink) Deliver(_ context.Context, d sinks.Delivery) error {
	s.e.mu.Lock()
	s.calls++
	n := s.calls
	s.e.mu.Unlock()
	if n == s.stall {
		time.Sleep(s.hold) // the fault: a delivery that stalls
		close(s.held)
	}
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.e.per[d.IdempotencyKey]++
	s.e.by[s.name]++
	return nil
}

func (e *effects) counts() (per map[string]int, by map[string]int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	per, by = map[string]int{}, map[string]int{}
	for k, v := range e.per {
		per[k] = v
	}
	for k, v := range e.by {
		by[k] = v
	}
	return per, by
}

func hookTopology(in string, s sinks.Sink) *topology.Topology {
	tp := topology.New("fence")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", s, serde.String(), nil)
	return tp
}

// filledOutbox starts a replica of hookTopology(in, s) on a new input
// topic, writes n records to it and waits until the outbox holds their n
// delivery requests; it returns the application id and the input topic.
func filledOutbox(t *testing.T, env *enginetest.Env, name string, s sinks.Sink, n int) (app, in string) {
	t.Helper()
	app, in = env.Name(name), env.Name("in")
	env.CreateTopic(in, 1)
	g, err := graph.Compile(hookTopology(in, s))
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	t.Cleanup(func() { _ = replica.Stop() })
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%03d", i), Value: fmt.Appendf(nil, "v%03d", i)})
	}
	env.ProduceRecords(recs...)
	env.WaitCount(app+"-sink-hook", n, 60*time.Second)
	return app, in
}

// evictionTuning configures the runners of an eviction test: a 6 s
// session, one delivery at a time, an attempt timeout (0: the default)
// and, for the runner to evict, connections through proxy.
func evictionTuning(proxy *testproxy.Proxy, attemptTimeout time.Duration) func(dial bool) func(*sinkrunner.Config) {
	timeouts := kafka.Timeouts{Session: 6 * time.Second, Rebalance: 6 * time.Second, Heartbeat: time.Second}.WithDefaults()
	return func(dial bool) func(*sinkrunner.Config) {
		return func(c *sinkrunner.Config) {
			c.Timeouts = timeouts
			c.Sinks.Parallelism = 1
			if attemptTimeout > 0 {
				c.Sinks.AttemptTimeout = attemptTimeout // the held attempt is not cut short
			}
			if dial {
				c.Client.Dial = proxy.Dial
			}
		}
	}
}

// healAtEnd ends proxy's faults when the test ends, before the runners
// started so far stop (cleanups run last in, first out): the evicted
// runner's connections are reset and new ones pass, so it stops at once
// instead of waiting out its dark connection and then a coordinator
// lookup through a closed proxy, about a minute.
func healAtEnd(t *testing.T, proxy *testproxy.Proxy) {
	t.Helper()
	t.Cleanup(func() {
		proxy.Reset()
		proxy.Heal()
	})
}
