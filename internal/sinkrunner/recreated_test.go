package sinkrunner_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// An input topic recreated (and the application's offsets on it reset)
// starts its offsets again, so the default idempotency keys of its new
// records are those of old ones. A new request with the same key and the
// same payload but another request time is not taken for a replay and
// skipped unseen: like one with another payload, it is not sent and is
// dead-lettered as a conflict under a key of its own, with the reason,
// for an operator to redrive.
func TestRecreatedInputIsNotAReplay(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	in := env.Name("orders")
	env.CreateTopic(in, 1)
	hook := newScripted(true)
	tp := topology.New("shop")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	outbox := app + "-sink-hook"
	produce := func(at time.Time, vs ...string) {
		// A client of its own each time: the topic is recreated in between.
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i, v := range vs {
			r := &kgo.Record{Topic: in, Key: []byte("k"), Value: []byte(v), Timestamp: at.Add(time.Duration(i) * time.Second)}
			if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	settled := func(n int) {
		t.Helper()
		env.WaitCount(outbox, n, 30*time.Second)
		last := env.Read(outbox)[n-1]
		until(t, fmt.Sprintf("%d requests settled", n), func() bool {
			return env.CommittedOffsets(app+"-sinks", outbox)[last.Partition] > last.Offset
		})
	}

	replica := env.Start(env.Config(app, "r1"), g)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	produce(start, "x", "same")
	startRunner(t, env, app, "r1", tp)
	settled(2)
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}

	// The input topic is deleted and created again with new records at
	// the old offsets; the application reads it from the start.
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.DeleteTopics(ctx, in); err != nil {
		t.Fatal(err)
	}
	until(t, "the input topic deleted", func() bool {
		td, err := adm.ListTopics(ctx, in)
		return err == nil && !td.Has(in)
	})
	env.CreateTopic(in, 1)
	produce(start.Add(30*time.Minute), "y", "same")
	rewind(t, env, app, in)
	replica = env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()
	settled(4)

	keys := map[string][]string{}
	for _, r := range env.Read(outbox) {
		keys[string(r.Value)] = append(keys[string(r.Value)], r.Headers[sinks.HeaderIdempotencyKey])
	}
	if k := keys["same"]; len(k) != 2 || k[0] != k[1] {
		t.Fatalf("the two requests of \"same\" have keys %v, want one key twice", k)
	}
	var got []string
	for _, r := range env.Read(outbox + "-dlq") {
		got = append(got, string(r.Value)+" "+r.Headers[wire.HeaderSinkClass])
		t.Logf("dead letter %s: %s", r.Value, r.Headers[wire.HeaderSinkError])
	}
	slices.Sort(got)
	if want := "same conflict,y conflict"; strings.Join(got, ",") != want {
		t.Errorf("dead letters %q, want %q", strings.Join(got, ","), want)
	}
	if calls, _ := hook.counts("same"); calls != 1 {
		t.Errorf("same: %d calls, want 1 (the first request)", calls)
	}
	if s := ledgerState(t, env, app, "hook", keys["same"][0]); s != sinkrunner.Succeeded {
		t.Errorf("the first request of same is %q, want %s", s, sinkrunner.Succeeded)
	}
}
