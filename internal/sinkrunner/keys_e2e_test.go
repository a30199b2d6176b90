package sinkrunner_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// payloadSink applies every delivery and counts them by payload.
type payloadSink struct {
	mu       sync.Mutex
	payloads map[string]int
}

func (s *payloadSink) Deliver(_ context.Context, d sinks.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.payloads[string(d.Payload)]++
	return nil
}

func (s *payloadSink) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.payloads {
		out[k] = v
	}
	return out
}

// settled is how many deliveries of sink the runner settled, whatever
// the outcome.
func settled(r *sinkrunner.Runner, sink string) int64 {
	var n int64
	for _, s := range r.Status() {
		if s.Sink == sink {
			for _, c := range s.Outcomes {
				n += c
			}
		}
	}
	return n
}

// End to end on the embedded broker: a basket fanned out by FlatMap and
// grouped through a repartition topic reaches the sink as one delivery
// per fruit. Each has an idempotency key of its own, so the
// runner delivers every fruit once and skips none as settled before.
func TestFanOutThroughRepartitionDeliversEveryRecord(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("fruit")
	in := env.Name("baskets")
	env.CreateTopic(in, 1)
	hook := &payloadSink{payloads: map[string]int{}}
	tp := topology.New("fruit")
	split := topology.FlatMap(topology.Source(tp, in, serde.String(), serde.String()),
		func(k, line string) ([]topology.KeyValue[string, string], error) {
			var kvs []topology.KeyValue[string, string]
			for _, w := range strings.Fields(line) {
				kvs = append(kvs, topology.KeyValue[string, string]{Key: k, Value: w})
			}
			return kvs, nil
		})
	// Grouped by basket: one record key, so the runner delivers the fruits
	// of a basket one after the other, in outbox order.
	byBasket := topology.GroupByKey(split, "by-basket", serde.String(), serde.String())
	topology.ToSink(byBasket.Stream(), "hook", hook, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()
	env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte("b1"), Value: []byte("apple pear plum")},
		&kgo.Record{Topic: in, Key: []byte("b2"), Value: []byte("fig")})
	env.WaitCount(app+"-sink-hook", 4, 60*time.Second)
	rn := startRunner(t, env, app, "r1", tp)
	waitFor(t, "4 deliveries settled", 60*time.Second, func() bool { return settled(rn.r, "hook") >= 4 })
	got := hook.snapshot()
	want := map[string]int{"apple": 1, "pear": 1, "plum": 1, "fig": 1}
	for f, n := range want {
		if got[f] != n {
			t.Errorf("%s delivered %d times, want %d (delivered: %v; outcomes %+v)", f, got[f], n, got, rn.r.Status())
		}
	}
	var keys []string
	for _, r := range env.Read(app + "-sink-hook") {
		keys = append(keys, r.Headers[sinks.HeaderIdempotencyKey])
	}
	t.Logf("idempotency keys %q", keys)
	slices.Sort(keys)
	if n := len(slices.Compact(keys)); n != 4 {
		t.Errorf("%d distinct idempotency keys, want 4", n)
	}
}
