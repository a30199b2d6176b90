package topics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/topics"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// An outbox holds the deliveries not made yet, and nothing else does:
// deleting it while its sink runner's group has not committed past them
// (the application stopped with deliveries pending) is refused unless
// forced, as it is while the application runs. Once they are delivered it
// may go.
func TestDeleteOutboxWithPendingDeliveriesIsRefused(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("app")
	outbox := app + "-sink-hook"
	env.CreateTopic(outbox, 1)
	env.CreateTopic(outbox+"-dlq", 1)
	env.Produce(outbox, 0, 5) // 5 deliveries requested, none made
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := topics.Connect(ctx, env.Brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	err = adm.Delete(ctx, []string{outbox}, false)
	if err == nil || !strings.Contains(err.Error(), "5") {
		t.Fatalf("delete of an outbox with 5 deliveries pending: %v; want a refusal naming them", err)
	}
	if !errors.Is(err, topics.ErrInUse) {
		t.Errorf("refusal %v does not wrap ErrInUse", err)
	}
	if err := adm.Delete(ctx, []string{outbox}, true); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
}

// Once the sink runner's group committed past every record of the
// outbox, it may be deleted without force.
func TestDeleteOutboxSettledIsAllowed(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("app")
	outbox := app + "-sink-hook"
	env.CreateTopic(outbox, 1)
	env.CreateTopic(outbox+"-dlq", 1)
	env.Produce(outbox, 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: outbox, Partition: 0, At: 5, LeaderEpoch: -1})
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, app+"-sinks", offsets); err != nil {
		t.Fatal(err)
	}
	adm, err := topics.Connect(ctx, env.Brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.Delete(ctx, []string{outbox}, false); err != nil {
		t.Fatalf("delete of a settled outbox: %v", err)
	}
}
