package sinkrunner_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// idempotentSink is a countingSink that declares itself idempotent (the
// runner would re-send it a delivery whose outcome it does not know).
type idempotentSink struct{ *countingSink }

func (idempotentSink) Idempotent() bool { return true }

// outboxTopology is a topology with one sink, "hook", whose outbox the
// test writes to directly (no engine runs), with idempotency keys of its
// own, as a key function gives them.
func outboxTopology(env *enginetest.Env, app string, s sinks.Sink, partitions int32) (*topology.Topology, string) {
	in := env.Name("in")
	env.CreateTopic(in, partitions)
	outbox := app + "-sink-hook"
	env.CreateTopic(outbox, partitions)
	tp := topology.New("shop")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", s, serde.String(),
		func(k, _ string) string { return "hook:" + k })
	return tp, outbox
}

// produceRequests writes n delivery requests to the outbox, keys and
// idempotency keys from..from+n-1.
func produceRequests(env *enginetest.Env, outbox string, from, n int) {
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Topic: outbox, Key: fmt.Appendf(nil, "customer-%d", i%40), Value: []byte("v"),
			Headers: []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: fmt.Appendf(nil, "hook:%d", i)}}})
	}
	env.ProduceRecords(rs...)
}

func committedSum(env *enginetest.Env, group, topic string) int64 {
	var n int64
	for _, o := range env.CommittedOffsets(group, topic) {
		n += o
	}
	return n
}

// A delivery recorded as succeeded is never sent again: the outbox is
// replayed from its start (the runner group's offsets reset) into a
// second runner with an empty local ledger, which restores the ledgers
// from their changelogs. Calls are counted at the sink, per idempotency
// key (not effects: the sink would absorb a re-send).
func TestReplayedOutboxSendsNothingSucceeded(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	hook := idempotentSink{newCountingSink()}
	tp, outbox := outboxTopology(env, app, hook, 3)
	const n = 300
	produceRequests(env, outbox, 0, n)
	first := startRunnerWith(t, env, app, "r1", tp, func(c *sinkrunner.Config) { c.StateDir = t.TempDir() }, nil)
	waitFor(t, "every delivery", 60*time.Second, func() bool { return len(hook.snapshot()) == n })
	waitFor(t, "offsets committed to the end", 30*time.Second, func() bool { return committedSum(env, app+"-sinks", outbox) == n })
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	// Replay: the group starts again from the first outbox record.
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	reset := kadm.Offsets{}
	for p := range env.EndOffsets(outbox) {
		reset.Add(kadm.Offset{Topic: outbox, Partition: p, At: 0, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, app+"-sinks", reset); err != nil {
		t.Fatalf("reset offsets: %v", err)
	}
	if got := committedSum(env, app+"-sinks", outbox); got != 0 {
		t.Fatalf("offsets after the reset sum to %d, want 0", got)
	}
	before := hook.snapshot()
	// An empty local ledger (in memory): it restores from the changelogs.
	startRunnerWith(t, env, app, "r2", tp, nil, nil)
	produceRequests(env, outbox, n, 10) // new requests: the second runner delivers
	waitFor(t, "the replay read to the end", 60*time.Second, func() bool { return committedSum(env, app+"-sinks", outbox) == n+10 })
	after := hook.snapshot()
	for k, c := range before {
		if after[k] != c {
			t.Errorf("%s: %d calls before the replay, %d after: a succeeded delivery was sent again", k, c, after[k])
		}
	}
	for i := n; i < n+10; i++ {
		if k := fmt.Sprintf("hook:%d", i); after[k] != 1 {
			t.Errorf("%s (new): %d calls, want 1", k, after[k])
		}
	}
	t.Logf("%d keys before the replay, %d after", len(before), len(after))
}

// A ledger write that fails after an attempt to a sink that is not
// idempotent went out (the success cannot be recorded) does not lead to
// a second send: the runner opens its ledgers again, restores the entry
// recorded before the attempt (in flight), parks it as unknown, and goes
// on delivering the rest.
func TestFailedLedgerWriteNeverResendsToNonIdempotentSink(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	hook := newCountingSink()
	tp, outbox := outboxTopology(env, app, hook, 1)
	const n = 100
	produceRequests(env, outbox, 0, n)
	var victim atomic.Pointer[string]
	fault := func(key string, e sinkrunner.Entry) error {
		if e.State == sinkrunner.Succeeded && victim.CompareAndSwap(nil, &key) {
			return errors.New("injected: the changelog is unreachable")
		}
		return nil
	}
	startRunnerWith(t, env, app, "r1", tp, func(c *sinkrunner.Config) { c.StateDir = t.TempDir() },
		func(r *sinkrunner.Runner) { r.FailLedgerWrites(fault) })
	waitFor(t, "every outbox record settled", 60*time.Second, func() bool { return committedSum(env, app+"-sinks", outbox) == n })
	if victim.Load() == nil {
		t.Fatal("no ledger write failed")
	}
	time.Sleep(300 * time.Millisecond) // a re-send would come now
	calls := hook.snapshot()
	if len(calls) != n {
		t.Errorf("%d keys sent, want %d", len(calls), n)
	}
	for k, c := range calls {
		if c != 1 {
			t.Errorf("%s sent %d times to a sink that is not idempotent, want 1", k, c)
		}
	}
	// The ledger: the victim parked as unknown (its success was never
	// recorded), the others succeeded or unknown (in the same failed batch).
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
	states := map[sinkrunner.State]int{}
	for _, e := range last {
		states[e.State]++
	}
	if e := last[*victim.Load()]; e.State != sinkrunner.Unknown {
		t.Errorf("%s: ledger state %s, want unknown", *victim.Load(), e.State)
	}
	if len(last) != n || states[sinkrunner.Succeeded]+states[sinkrunner.Unknown] != n {
		t.Errorf("ledger states %v over %d keys, want %d succeeded or unknown", states, len(last), n)
	}
	t.Logf("failed write of %s; ledger states %v", *victim.Load(), states)
}
