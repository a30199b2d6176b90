package sinkadmin

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/sinks"
)

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

// Fixture writes, on the embedded broker, what a runner of application
// "shop" leaves behind for two sinks, "hook" and "db", plus topics that
// are not theirs, and returns the broker's addresses.
func Fixture(t *testing.T) []string {
	t.Helper()
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"shop-sink-hook", "shop-sink-hook-ledger-changelog", "shop-sink-hook-dlq",
		"shop-sink-db-ledger-changelog", "other-sink-x-dlq", "shop-orders"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(s sinkrunner.State, attempts int, inFlight bool) []byte {
		return sinkrunner.EncodeEntry(sinkrunner.Entry{State: s, Attempts: attempts, InFlight: inFlight, First: t0, Updated: t0})
	}
	ledger := func(topic, key string, p int32, v []byte) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: v}
	}
	const hook, db = "shop-sink-hook-ledger-changelog", "shop-sink-db-ledger-changelog"
	recs := []*kgo.Record{
		ledger(hook, "hook:k1", 0, entry(sinkrunner.Pending, 1, true)),
		ledger(hook, "hook:k1", 0, entry(sinkrunner.Succeeded, 1, false)),
		ledger(hook, "hook:k2", 1, entry(sinkrunner.Unknown, 1, false)),
		ledger(hook, "hook:k3", 0, entry(sinkrunner.Pending, 2, true)),
		ledger(hook, "hook:k4", 1, entry(sinkrunner.Failed, 5, false)),
		ledger(hook, "hook:k4", 1, entry(sinkrunner.DeadLettered, 5, false)),
		ledger(hook, "hook:k5", 0, entry(sinkrunner.Succeeded, 1, false)),
		ledger(hook, "hook:k5", 0, nil), // a tombstone
		ledger(hook, "hook:k6", 1, []byte("not json")),
		ledger(db, "db:k1", 0, entry(sinkrunner.Succeeded, 1, false)),
		{Topic: "shop-sink-hook-dlq", Partition: 1, Key: []byte("customer-7"), Value: []byte(`{"order":"o-4"}`), Timestamp: t0,
			Headers: []kgo.RecordHeader{
				{Key: sinks.HeaderIdempotencyKey, Value: []byte("hook:k4")},
				{Key: wire.HeaderSinkError, Value: []byte("status 422")},
				{Key: wire.HeaderSinkAttempts, Value: []byte("5")},
				{Key: wire.HeaderSinkClass, Value: []byte("permanent")},
				{Key: wire.HeaderSource, Value: []byte("shop-orders/1/9")},
				{Key: wire.HeaderSinkOutbox, Value: []byte("shop-sink-hook/1/3")},
			}},
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return b.Addrs()
}

func TestStatus(t *testing.T) {
	brokers := Fixture(t)
	ctx := context.Background()
	names, err := Sinks(ctx, brokers, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"db", "hook"}) {
		t.Fatalf("sinks %v, want [db hook]", names)
	}
	// Three requests in hook's outbox, the runners' group committed past
	// the first: two unread. db has no outbox yet.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "shop-sink-hook", Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "shop-sink-hook", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, RunnerGroup("shop"), offs); err != nil {
		t.Fatal(err)
	}
	sts, err := StatusOf(ctx, brokers, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(sts)
	want := "[{db shop-sink-db-ledger-changelog 1 map[dead-lettered:0 failed:0 pending:0 succeeded:1 unknown:0] 0 0 shop-sink-db 0 false}" +
		" {hook shop-sink-hook-ledger-changelog 4 map[dead-lettered:1 failed:0 pending:1 succeeded:1 unknown:1] 1 1 shop-sink-hook 2 false}]"
	if got != want {
		t.Errorf("status\n %s\nwant\n %s", got, want)
	}
	unknown, err := Unknown(ctx, brokers, "shop", "hook")
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0].Key != "hook:k2" || unknown[0].Attempts != 1 {
		t.Errorf("unknown %+v, want hook:k2 after 1 attempt", unknown)
	}
}

func TestDeadLetters(t *testing.T) {
	brokers := Fixture(t)
	dls, err := DeadLetters(context.Background(), brokers, "shop", "hook")
	if err != nil {
		t.Fatal(err)
	}
	want := DeadLetter{Sink: "hook", Partition: 1, Offset: 0, Key: "hook:k4", Error: "status 422", Class: "permanent", Attempts: 5,
		Source: "shop-orders/1/9", Outbox: "shop-sink-hook/1/3", Time: t0, RecordKey: []byte("customer-7"), Payload: []byte(`{"order":"o-4"}`), State: "dead-lettered"}
	if len(dls) != 1 || fmt.Sprint(dls[0]) != fmt.Sprint(want) {
		t.Errorf("dead letters %+v, want [%+v]", dls, want)
	}
	if _, err := DeadLetters(context.Background(), brokers, "shop", "db"); err == nil {
		t.Error("a sink without a dead-letter topic: no error")
	}
}
