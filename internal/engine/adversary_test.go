package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// hookTickTopology keeps a count in a store and, every 10 s of stream time,
// delivers the count to the sink "hook" under the default idempotency key.
func hookTickTopology(in string) *topology.Topology {
	tp := topology.New("tick")
	src := topology.Source(tp, in, serde.String(), serde.String())
	seen := topology.Store(tp, "seen", serde.String(), serde.Int64())
	counted := topology.Process(src, "count", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		n, _, err := seen.Get(ctx, "n")
		if err != nil {
			return err
		}
		return seen.Put(ctx, "n", n+1)
	}, seen)
	topology.Punctuate(counted, topology.StreamTime, 10*time.Second, func(ctx topology.Context[string, string], at time.Time) error {
		n, _, err := seen.Get(ctx, "n")
		if err != nil {
			return err
		}
		return ctx.Forward(topology.Record[string, string]{Key: "tick", Value: fmt.Sprintf("%d records by %s", n, at.Format(time.RFC3339)), Timestamp: at})
	})
	topology.ToSink(counted, "hook", sinks.Func(func(context.Context, sinks.Delivery) error { return nil }), serde.String(), nil)
	return tp
}

// A stream-time punctuator that fired and committed in one session fires
// again in the next one (after a restart or a move) at the same stream
// time when the input reaches that time again (late records first, then
// one stamped at the earlier firing's time): the task's stream time is
// not kept across sessions when its sub-topology has no dedup store, and
// the schedule starts afresh. Each firing is a delivery of its own, with
// its own payload, and must have an idempotency key of its own: a sink
// runner skips (or dead-letters as a conflict) a key it settled before.
func TestAdversaryStreamPunctuatorKeysAcrossSessions(t *testing.T) {
	env := enginetest.New(t)
	in, app := env.Name("in"), env.Name("app")
	outbox := app + "-sink-hook"
	env.CreateTopic(in, 1)
	g := compile(t, hookTickTopology(in))
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	at := func(offsets ...time.Duration) {
		t.Helper()
		for _, off := range offsets {
			env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte("k"), Value: []byte(off.String()), Timestamp: base.Add(off)})
			// One record per batch: the stream time of every batch is known.
			want := env.EndOffsets(in)[0]
			waitFor(t, "the record consumed", 60*time.Second, func() bool { return env.CommittedOffsets(app, in)[0] >= want })
		}
	}
	session := func(offsets ...time.Duration) {
		t.Helper()
		r := env.Start(stateConfig(env, app, "r1", dir), g)
		r.WaitReady(t, 60*time.Second)
		at(offsets...)
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	session(0, 10*time.Second) // fires at base+10s
	session(0, 10*time.Second) // a late record, then base+10s again
	keys := map[string][]string{}
	for _, r := range env.Read(outbox) {
		k := r.Headers[wire.HeaderIdempotencyKey]
		keys[k] = append(keys[k], string(r.Value))
	}
	deliveries := 0
	for k, vs := range keys {
		deliveries += len(vs)
		if len(vs) > 1 {
			t.Errorf("%d deliveries share the idempotency key %q: %q", len(vs), k, vs)
		}
	}
	if deliveries < 2 {
		t.Fatalf("%d deliveries in the outbox, want one per session: the scenario did not happen", deliveries)
	}
	t.Logf("%d deliveries, %d keys", deliveries, len(keys))
}

// One of two merged input topics grows from 2 to 4 partitions while
// replicas run. The task assignor does not assign the added partitions
// (partition 2 of the merge would be one topic only), so their records are
// never processed. A replica started now refuses the topics as not
// co-partitioned; a running one must not go on silently leaving input
// behind: it processes the added partitions' records or stops with an
// error that says why.
func TestAdversaryMergedTopicGrownWhileRunning(t *testing.T) {
	env := enginetest.New(t)
	a, b, out, app := env.Name("ma"), env.Name("mb"), env.Name("out"), env.Name("app")
	env.CreateTopic(a, 2)
	env.CreateTopic(b, 2)
	g := compile(t, mergeCountTopology(a, b, out))
	r1 := env.Start(stateConfig(env, app, "r1", t.TempDir()), g)
	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	waitFor(t, "both members in the group", 60*time.Second, func() bool { return len(env.Members(app)) == 2 && r1.E.Ready() && r2.E.Ready() })

	env.GrowTopic(a, 4)
	env.ProduceLarge(ordinary(a, 0, 200)...) // a new client: it sees 4 partitions
	// r2 leaves: the group rebalances with the grown topic.
	if err := r2.Stop(); err != nil && !errors.Is(err, engine.ErrNotCopartitioned) {
		t.Fatal(err)
	}
	added := 0
	for p, o := range env.EndOffsets(a) {
		if p >= 2 {
			added += int(o)
		}
	}
	if added == 0 {
		t.Fatal("no record on the added partitions")
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err, stopped := r1.Wait(100 * time.Millisecond); stopped {
			t.Logf("r1 stopped: %v", err)
			if err == nil {
				t.Error("r1 stopped without an error, leaving the added partitions' records behind")
			}
			return
		}
		done := env.CommittedOffsets(app, a)
		if done[2]+done[3] >= int64(added) {
			return
		}
	}
	done := env.CommittedOffsets(app, a)
	t.Errorf("after 60 s r1 still runs and %d of the %d records on the added partitions were processed (committed %v): input left behind without an error",
		done[2]+done[3], added, done)
	r1.Stop()
}
