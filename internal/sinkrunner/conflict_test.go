package sinkrunner_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/sinks"
)

// resetOffsets moves group's offsets on every partition of topic to 0.
func resetOffsets(t *testing.T, env *enginetest.Env, group, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	reset := kadm.Offsets{}
	for p := range env.EndOffsets(topic) {
		reset.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, group, reset); err != nil {
		t.Fatalf("reset offsets: %v", err)
	}
}

// An idempotency key that comes back with another payload is a conflict:
// the runner does not skip it as settled before, nor send it under the
// key, but dead-letters it (class conflict) under a key of its own, and
// leaves the first delivery's ledger entry as it was. The same payload
// again is a replay and is skipped. Replayed from the start into a runner
// with an empty local ledger, nothing is sent or dead-lettered twice; a
// redrive of the conflict delivers its payload under the conflict key.
func TestConflictingPayloadIsDeadLettered(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	hook := &payloadSink{payloads: map[string]int{}}
	tp, outbox := outboxTopology(env, app, hook, 1)
	request := func(payload string) *kgo.Record {
		return &kgo.Record{Topic: outbox, Key: []byte("customer-1"), Value: []byte(payload),
			Headers: []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: []byte("hook:k1")}}}
	}
	env.ProduceRecords(request("apple"), request("pear"), request("apple"))
	first := startRunnerWith(t, env, app, "r1", tp, func(c *sinkrunner.Config) { c.StateDir = t.TempDir() }, nil)
	waitFor(t, "3 requests settled", 60*time.Second, func() bool { return settled(first.r, "hook") >= 3 })
	outcomes := first.r.Status()[0].Outcomes
	check := func(when string) {
		t.Helper()
		if got := hook.snapshot(); got["apple"] != 1 || got["pear"] != 0 {
			t.Errorf("%s: delivered %v, want apple once and pear never", when, got)
		}
		dlq := env.Read(outbox + "-dlq")
		if len(dlq) != 1 {
			t.Fatalf("%s: %d dead letters, want 1 (outcomes %v)", when, len(dlq), outcomes)
		}
		dl := dlq[0]
		if string(dl.Value) != "pear" || dl.Headers[wire.HeaderSinkClass] != "conflict" ||
			dl.Headers[sinks.HeaderIdempotencyKey] != "hook:k1!conflict@0/1" || dl.Headers[wire.HeaderSinkOutbox] != outbox+"/0/1" {
			t.Errorf("%s: dead letter %q with headers %v", when, dl.Value, dl.Headers)
		}
		t.Logf("%s: dead letter error %q", when, dl.Headers[wire.HeaderSinkError])
		last := map[string]sinkrunner.Entry{}
		for _, r := range env.Read(outbox + "-ledger-changelog") {
			if sinkrunner.IsFence(r.Key) {
				continue
			}
			if r.Value == nil { // a tombstone removes its key
				delete(last, string(r.Key))
				continue
			}
			e, err := sinkrunner.DecodeEntry(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			last[string(r.Key)] = e
		}
		if e := last["hook:k1"]; e.State != sinkrunner.Succeeded || e.Attempts != 1 {
			t.Errorf("%s: hook:k1 is %s after %d attempts, want succeeded after 1", when, e.State, e.Attempts)
		}
		if e := last["hook:k1!conflict@0/1"]; e.State != sinkrunner.DeadLettered {
			t.Errorf("%s: the conflict's entry is %q, want dead-lettered", when, e.State)
		}
	}
	if outcomes[sinkrunner.OutcomeSucceeded] != 1 || outcomes[sinkrunner.OutcomeDeadLettered] != 1 || outcomes[sinkrunner.OutcomeSkipped] != 1 {
		t.Errorf("outcomes %v, want 1 succeeded, 1 dead-lettered, 1 skipped", outcomes)
	}
	check("first run")
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	resetOffsets(t, env, app+"-sinks", outbox)
	second := startRunnerWith(t, env, app, "r2", tp, nil, nil)
	waitFor(t, "3 requests settled again", 60*time.Second, func() bool { return settled(second.r, "hook") >= 3 })
	outcomes = second.r.Status()[0].Outcomes
	if outcomes[sinkrunner.OutcomeSkipped] != 3 {
		t.Errorf("replay outcomes %v, want 3 skipped", outcomes)
	}
	check("after the replay")

	// An operator who wants the conflicting payload applied too redrives
	// it: it is delivered under its conflict key, once.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sinkadmin.Redrive(ctx, env.Brokers, app, "hook", "hook:k1!conflict@0/1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the redriven conflict delivered", 60*time.Second, func() bool { return hook.snapshot()["pear"] == 1 })
	waitFor(t, "the redrive settled", 60*time.Second, func() bool { return settled(second.r, "hook") >= 4 })
	if got := hook.snapshot(); got["apple"] != 1 || got["pear"] != 1 {
		t.Errorf("after the redrive: delivered %v, want apple and pear once each", got)
	}
}
