package sinkrunner_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// A command is applied once, told by its outbox offset; an outbox deleted
// and created again starts its offsets again, so a redrive written to the
// new one has an offset below the one the ledger recorded for an earlier
// redrive. It is applied, not taken for that earlier one read again.
func TestRedriveAfterOutboxRecreated(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	in := env.Name("orders")
	env.CreateTopic(in, 1)
	hook := newScripted(true)
	hook.then("bad-0", "permanent", "permanent") // dead-lettered, redriven, dead-lettered again
	tp := topology.New("shop")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	outbox := app + "-sink-hook"
	replica := env.Start(env.Config(app, "r1"), g)
	// Filler requests, so the first redrive has a high offset.
	for _, v := range []string{"bad-0", "ok-1", "ok-2", "ok-3", "ok-4"} {
		env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte(v), Value: []byte(v)})
	}
	env.WaitCount(outbox, 5, 30*time.Second)
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	var key string
	for _, r := range env.Read(outbox) {
		if string(r.Value) == "bad-0" {
			key = r.Headers[sinks.HeaderIdempotencyKey]
		}
	}
	first := startRunner(t, env, app, "r1", tp)
	ctx := context.Background()
	until(t, "bad-0 dead-lettered", func() bool { return ledgerState(t, env, app, "hook", key) == sinkrunner.DeadLettered })
	cmd, err := sinkadmin.Redrive(ctx, env.Brokers, app, "hook", key)
	if err != nil {
		t.Fatal(err)
	}
	until(t, "bad-0 redriven and dead-lettered again", func() bool {
		calls, _ := hook.counts("bad-0")
		return calls == 2 && ledgerState(t, env, app, "hook", key) == sinkrunner.DeadLettered &&
			env.CommittedOffsets(app+"-sinks", outbox)[cmd.Partition] > cmd.Offset
	})
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	// The outbox is deleted and created again (the runner's offsets on it
	// start again too); the delivery is redriven once more.
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(ctx, outbox); err != nil {
		t.Fatal(err)
	}
	until(t, "the outbox deleted", func() bool {
		td, err := adm.ListTopics(ctx, outbox)
		return err == nil && !td.Has(outbox)
	})
	env.CreateTopic(outbox, 1)
	rewind(t, env, app+"-sinks", outbox)
	again, err := sinkadmin.Redrive(ctx, env.Brokers, app, "hook", key)
	if err != nil {
		t.Fatal(err)
	}
	if again.Offset >= cmd.Offset {
		t.Fatalf("the second redrive is at offset %d, the first at %d: the test needs it lower", again.Offset, cmd.Offset)
	}
	startRunner(t, env, app, "r1", tp)
	until(t, "the second redrive read", func() bool {
		return env.CommittedOffsets(app+"-sinks", outbox)[again.Partition] > again.Offset
	})
	calls, effects := hook.counts("bad-0")
	if s := ledgerState(t, env, app, "hook", key); s != sinkrunner.Succeeded || calls != 3 || effects != 1 {
		t.Errorf("bad-0 after the second redrive: %s, %d calls, %d effects; want %s, 3 and 1", s, calls, effects, sinkrunner.Succeeded)
	}
}
