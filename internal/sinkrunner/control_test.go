package sinkrunner_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// broken is a sink that fails until fixed: permanently for "bad" payloads
// (and "worse" ones, even fixed),
// with an unknown outcome (nothing applied) for "lost" ones. It counts
// attempts and applied effects per idempotency key.
type broken struct {
	idempotent bool
	mu         sync.Mutex
	fixed      bool
	calls      map[string]int
	effects    map[string]int
}

func newBroken(idempotent bool) *broken {
	return &broken{idempotent: idempotent, calls: map[string]int{}, effects: map[string]int{}}
}

func (b *broken) Idempotent() bool { return b.idempotent }

func (b *broken) Deliver(_ context.Context, d sinks.Delivery) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[d.IdempotencyKey]++
	p := string(d.Payload)
	switch {
	case strings.HasPrefix(p, "worse"), !b.fixed && strings.HasPrefix(p, "bad"):
		return sinks.PermanentError(errors.New("400 bad request"))
	case !b.fixed && strings.HasPrefix(p, "lost") && !b.idempotent:
		return sinks.UnknownError(errors.New("no answer"))
	}
	b.effects[d.IdempotencyKey]++
	return nil
}

func (b *broken) fix() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fixed = true
}

func (b *broken) counts(key string) (calls, effects int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[key], b.effects[key]
}

// until polls cond for up to 30 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	enginetest.WaitFor(t, what, 30*time.Second, cond)
}

// ledgerState reads a delivery's state from the ledger changelog.
func ledgerState(t *testing.T, env *enginetest.Env, app, sink, key string) sinkrunner.State {
	t.Helper()
	ds, _, err := sinkadmin.Ledger(context.Background(), env.Brokers, app, sink)
	if err != nil {
		return ""
	}
	for _, d := range ds {
		if d.Key == key {
			return d.State
		}
	}
	return ""
}

// A permanent failure is dead-lettered; the sink is fixed; a redrive
// delivers it once, under its idempotency key, and a second redrive is
// refused. Unknown outcomes to a sink that is not idempotent are parked;
// one resolved as retry is sent once more and applied once, one resolved
// as succeeded is never sent again, one resolved as failed is
// dead-lettered. The runner is restarted in between, so the commands are
// read again from the outbox by a new runner and must not apply twice.
func TestRedriveAndResolve(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	in := env.Name("orders")
	env.CreateTopic(in, 2)
	hook, legacy := newBroken(true), newBroken(false)
	tp := topology.New("shop")
	orders := topology.Source(tp, in, serde.String(), serde.String())
	topology.ToSink(orders, "hook", hook, serde.String(), nil)
	topology.ToSink(orders, "legacy", legacy, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()
	var rs []*kgo.Record
	for i, v := range []string{"ok-0", "bad-1", "lost-2", "lost-3", "lost-4", "ok-5", "worse-6"} {
		rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "customer-%d", i), Value: []byte(v)})
	}
	env.ProduceRecords(rs...)
	first := startRunner(t, env, app, "r1", tp)

	// Idempotency keys by payload, from the outbox.
	env.WaitCount(app+"-sink-hook", len(rs), 30*time.Second)
	keys := map[string]map[string]string{}
	for _, sink := range []string{"hook", "legacy"} {
		keys[sink] = map[string]string{}
		for _, r := range env.Read(app + "-sink-" + sink) {
			keys[sink][string(r.Value)] = r.Headers[sinks.HeaderIdempotencyKey]
		}
	}
	bad, worse := keys["hook"]["bad-1"], keys["hook"]["worse-6"]
	until(t, "bad-1 dead-lettered", func() bool { return ledgerState(t, env, app, "hook", bad) == sinkrunner.DeadLettered })
	until(t, "worse-6 dead-lettered", func() bool { return ledgerState(t, env, app, "hook", worse) == sinkrunner.DeadLettered })
	for _, v := range []string{"lost-2", "lost-3", "lost-4"} {
		until(t, v+" parked", func() bool { return ledgerState(t, env, app, "legacy", keys["legacy"][v]) == sinkrunner.Unknown })
	}
	ctx := context.Background()
	if _, err := sinkadmin.Resolve(ctx, env.Brokers, app, "legacy", keys["legacy"]["ok-0"], wire.SinkResolveRetry); !errors.Is(err, sinkadmin.ErrState) {
		t.Errorf("resolve of a succeeded delivery: %v, want ErrState", err)
	}

	hook.fix()
	legacy.fix()
	for _, k := range []string{bad, worse} {
		if _, err := sinkadmin.Redrive(ctx, env.Brokers, app, "hook", k); err != nil {
			t.Fatal(err)
		}
	}
	for v, as := range map[string]string{"lost-2": wire.SinkResolveRetry, "lost-3": wire.SinkResolveSucceeded, "lost-4": wire.SinkResolveFailed} {
		if _, err := sinkadmin.Resolve(ctx, env.Brokers, app, "legacy", keys["legacy"][v], as); err != nil {
			t.Fatal(err)
		}
	}
	until(t, "bad-1 redriven", func() bool { return ledgerState(t, env, app, "hook", bad) == sinkrunner.Succeeded })
	until(t, "worse-6 redriven and dead-lettered again", func() bool { return len(env.Read(app+"-sink-hook-dlq")) == 3 })
	until(t, "lost-4 dead-lettered", func() bool {
		return ledgerState(t, env, app, "legacy", keys["legacy"]["lost-4"]) == sinkrunner.DeadLettered
	})
	until(t, "lost-2 sent again", func() bool {
		return ledgerState(t, env, app, "legacy", keys["legacy"]["lost-2"]) == sinkrunner.Succeeded
	})
	if _, err := sinkadmin.Redrive(ctx, env.Brokers, app, "hook", bad); !errors.Is(err, sinkadmin.ErrState) {
		t.Errorf("second redrive: %v, want ErrState", err)
	}

	// A new runner reads the whole outbox again (commands included) from
	// a fresh ledger store restored from the changelog.
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	topics := []string{app + "-sink-hook", app + "-sink-legacy"}
	before := map[string]string{}
	for _, topic := range topics {
		before[topic] = fmt.Sprint(env.CommittedOffsets(app+"-sinks", topic))
	}
	rewind(t, env, app+"-sinks", topics...)
	startRunner(t, env, app, "r2", tp)
	until(t, "the outboxes read again", func() bool {
		for _, topic := range topics {
			if fmt.Sprint(env.CommittedOffsets(app+"-sinks", topic)) != before[topic] {
				return false
			}
		}
		return true
	})

	for _, c := range []struct {
		b              *broken
		sink, payload  string
		calls, effects int
	}{
		{hook, "hook", "bad-1", 2, 1}, // refused once, redriven once
		{hook, "hook", "ok-0", 1, 1},
		{hook, "hook", "worse-6", 2, 0},    // redriven once, not again when the redrive is read again       // untouched
		{legacy, "legacy", "lost-2", 2, 1}, // unknown, then resolved as retry
		{legacy, "legacy", "lost-3", 1, 0}, // resolved as succeeded: never sent again
		{legacy, "legacy", "lost-4", 1, 0}, // resolved as failed: dead-lettered
		{legacy, "legacy", "ok-5", 1, 1},   // untouched
	} {
		calls, effects := c.b.counts(keys[c.sink][c.payload])
		if calls != c.calls || effects != c.effects {
			t.Errorf("%s %s: %d calls, %d effects; want %d and %d", c.sink, c.payload, calls, effects, c.calls, c.effects)
		}
	}
	var got []string
	for _, sink := range []string{"hook", "legacy"} {
		for _, r := range env.Read(app + "-sink-" + sink + "-dlq") {
			if r.Headers[sinks.HeaderIdempotencyKey] != keys[sink][string(r.Value)] {
				t.Errorf("%s dead letter %s has key %s, want %s", sink, r.Value, r.Headers[sinks.HeaderIdempotencyKey], keys[sink][string(r.Value)])
			}
			got = append(got, sink+" "+string(r.Value))
		}
	}
	slices.Sort(got)
	if want := "hook bad-1,hook worse-6,hook worse-6,legacy bad-1,legacy lost-4,legacy worse-6"; strings.Join(got, ",") != want {
		t.Errorf("dead letters %s, want %s", strings.Join(got, ","), want)
	}
}

// rewind commits offset 0 for every partition of topics in an empty
// group, so its next member reads them again.
func rewind(t *testing.T, env *enginetest.Env, group string, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var os kadm.Offsets
	for _, topic := range topics {
		for p := range env.Partitions(topic) {
			os.AddOffset(topic, int32(p), 0, -1)
		}
	}
	resp, err := kadm.NewClient(cl).CommitOffsets(context.Background(), group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		if c := env.CommittedOffsets(group, topic); c[0] != 0 {
			t.Fatalf("rewind %s: committed %v", topic, c)
		}
	}
}
