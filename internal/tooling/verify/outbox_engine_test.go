package verify_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// The sink runner purges an outbox below its committed offsets once the
// deliveries there are settled (every 30 s by default): an input whose
// outcome was a delivery made and purged still has its outcome, which the
// delivery ledger keeps.
func TestOutcomesOfPurgedOutboxDeliveries(t *testing.T) {
	e := enginetest.New(t)
	in, app := e.Name("in"), e.Name("app")
	e.CreateTopic(in, 1)
	e.Produce(in, 0, 30)
	var delivered atomic.Int64
	hook := sinks.Func(func(context.Context, sinks.Delivery) error { delivered.Add(1); return nil })
	tp := topology.New("hooked")
	src := topology.Source(tp, in, serde.String(), serde.String())
	topology.ToSink(src, "hook", hook, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	p, err := processor.New(processor.Config{Brokers: e.Brokers, ApplicationID: app, InstanceID: "r1", CommitInterval: 20 * time.Millisecond}, tp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	outbox := app + "-sink-hook"
	sinksGroup := app + "-sinks"
	defer func() {
		if t.Failed() {
			t.Logf("%d deliveries, committed %v", delivered.Load(), e.CommittedOffsets(sinksGroup, outbox))
		}
	}()
	enginetest.WaitFor(t, "30 deliveries with their outbox offsets committed", 60*time.Second, func() bool {
		return delivered.Load() >= 30 && e.CommittedOffsets(sinksGroup, outbox)[0] >= 30
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	spec := verify.SpecOf(g.WithPrefix(app), app+"-rejected")
	check := outcomeCheck(t, e, spec)
	if rep := check("before the purge"); !rep.OK || rep.WithOutput != 30 {
		t.Fatalf("before the purge: %+v", rep)
	}
	// The runner's purge: the outbox deleted below the committed offsets.
	e.DeleteRecords(outbox, e.CommittedOffsets(sinksGroup, outbox))
	if rep := check("after the purge"); !rep.OK || rep.WithOutput != 30 || rep.Missing != 0 || len(rep.Topics) != 1 || rep.Topics[0].Purged != 30 {
		t.Fatalf("after the purge of delivered records: %+v", rep)
	}
}

// An operator's redrive of a dead letter is a command record in the
// outbox with the delivery's key, payload, idempotency key and lineage
// (sinkadmin writes it so): not a second outcome of the input.
func TestOutcomesRedriveCommandIsNoDouble(t *testing.T) {
	e := enginetest.New(t)
	in, app := e.Name("in"), e.Name("app")
	e.CreateTopic(in, 1)
	e.Produce(in, 0, 10)
	hook := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
	tp := topology.New("hooked")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	g = g.WithPrefix(app)
	outbox := app + "-sink-hook"
	p, err := processor.New(processor.Config{Brokers: e.Brokers, ApplicationID: app, InstanceID: "r1", CommitInterval: 20 * time.Millisecond}, tp)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	e.WaitCount(outbox, 10, 60*time.Second)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	first := e.Read(outbox)[0]
	hs := []kgo.RecordHeader{
		{Key: sinks.HeaderIdempotencyKey, Value: []byte(first.Headers[sinks.HeaderIdempotencyKey])},
		{Key: wire.HeaderSinkCommand, Value: []byte("redrive")},
		{Key: wire.HeaderSource, Value: []byte(first.Headers[wire.HeaderSource])},
	}
	e.ProduceRecords(&kgo.Record{Topic: outbox, Partition: first.Partition, Key: first.Key, Value: first.Value, Headers: hs})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := verify.Outcomes(ctx, e.Brokers, verify.SpecOf(g, app+"-rejected"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep)
	if !rep.OK || rep.Doubled != 0 || rep.WithOutput != 10 {
		t.Fatalf("a redrive command read as an outcome: %+v", rep)
	}
}
