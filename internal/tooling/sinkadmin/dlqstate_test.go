package sinkadmin

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/sinks"
)

// Each dead letter carries its delivery's current state from the ledger,
// and is marked redriven once a redrive took it out of the dead-lettered
// state (or it was dead-lettered again later, under a newer record).
func TestDeadLettersCarryTheirCurrentState(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const ledger, dlq = "shop-sink-hook-ledger-changelog", "shop-sink-hook-dlq"
	for _, topic := range []string{"shop-sink-hook", ledger, dlq} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(key string, s sinkrunner.State, command int64) *kgo.Record {
		return &kgo.Record{Topic: ledger, Key: []byte(key), Value: sinkrunner.EncodeEntry(sinkrunner.Entry{State: s, Attempts: 1, First: t0, Updated: t0, Command: command})}
	}
	dead := func(key string) *kgo.Record {
		return &kgo.Record{Topic: dlq, Value: []byte("{}"), Headers: []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: []byte(key)}}}
	}
	recs := []*kgo.Record{
		entry("hook:a", sinkrunner.DeadLettered, 0), dead("hook:a"), // still dead
		entry("hook:b", sinkrunner.Succeeded, 4), dead("hook:b"), // redriven, delivered
		dead("hook:c"), dead("hook:c"), entry("hook:c", sinkrunner.DeadLettered, 6), // redriven, dead again
		entry("hook:d", sinkrunner.Pending, 7), dead("hook:d"), // redrive under way
		dead("hook:e"), // not in the ledger (expired)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dls, err := DeadLetters(ctx, b.Addrs(), "shop", "hook")
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		key, state string
		redriven   bool
	}
	want := []got{
		{"hook:a", "dead-lettered", false}, {"hook:b", "succeeded", true}, {"hook:c", "dead-lettered", true},
		{"hook:c", "dead-lettered", false}, {"hook:d", "pending", true}, {"hook:e", "", false},
	}
	if len(dls) != len(want) {
		t.Fatalf("%d dead letters, want %d", len(dls), len(want))
	}
	for i, d := range dls {
		if g := (got{d.Key, d.State, d.Redriven}); g != want[i] {
			t.Errorf("dead letter %d: %+v, want %+v", i, g, want[i])
		}
	}
}
