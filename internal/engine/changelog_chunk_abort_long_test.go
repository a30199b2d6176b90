//go:build long

package engine_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// TestChangelogChunkSentThenAborted runs one transaction of more state
// changes than a changelog chunk: keys written before the chunk goes out
// are written again after it (a put deleted, a delete put back), and the
// transaction's first commit fails after the chunk was sent. The rewind
// processes the input again in a new transaction. The local state, the
// changelog as read_committed and a replica restoring from it must all
// hold the last write of each key: nothing of the aborted transaction,
// and no write of the chunk after the later one.
func TestChangelogChunkSentThenAborted(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("fails a commit with the embedded broker's faults")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	changelog := app + "-kv-changelog"
	env.CreateTopic(in, 1)
	g := compile(t, applyTopology(in, out))

	rec := func(k, v string) *kgo.Record { return &kgo.Record{Topic: in, Key: []byte(k), Value: []byte(v)} }
	// b exists before the transaction; the transaction deletes it in the
	// first chunk and puts it back after.
	env.ProduceRecords(rec("b", "put:0"))
	cfg := stateConfig(env, app, "r1", t.TempDir())
	r1 := env.Start(cfg, g)
	env.WaitCount(out, 1, 60*time.Second)
	r1.Stop()

	const filler = 8300 // more than one chunk (8,192 changes)
	head := []*kgo.Record{rec("a", "put:1"), rec("b", "del"), rec("c", "put:1")}
	for i := range filler {
		head = append(head, rec(fmt.Sprintf("k%05d", i), "put:x"))
	}
	tail := []*kgo.Record{rec("a", "del"), rec("b", "put:2"), rec("c", "put:2"), rec("c", "put:3")}
	total := 1 + len(head) + len(tail)

	// The first commit of the big transaction fails.
	var failed atomic.Bool
	h := env.Broker.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TopLevel: true, Err: kerr.InvalidTxnState,
		When: func(req kmsg.Request) bool {
			return req.(*kmsg.EndTxnRequest).Commit && failed.CompareAndSwap(false, true)
		}})
	defer h.Remove()

	cfg = stateConfig(env, app, "r1", cfg.StateDir)
	cfg.CommitRecords = len(head) + len(tail) // one transaction
	cfg.CommitInterval = 20 * time.Second
	r1 = env.Start(cfg, g)
	r1.WaitReady(t, 30*time.Second)
	outSeen := uncommittedReader(t, env.Brokers, out)
	logSeen := uncommittedReader(t, env.Brokers, changelog)
	env.ProduceRecords(head...)
	// The head's chunk is on the changelog, in the open transaction,
	// before the tail is read.
	waitFor(t, "the head's outputs, uncommitted", 90*time.Second, func() bool { return outSeen() >= 1+len(head) })
	waitFor(t, "a chunk on the changelog, uncommitted", 60*time.Second, func() bool { return logSeen() >= 1+8192 })
	if failed.Load() {
		t.Fatal("a commit came before the tail was produced")
	}
	env.ProduceRecords(tail...)
	env.WaitCount(out, total, 90*time.Second)
	env.ProduceRecords(rec("a", "get"), rec("b", "get"), rec("c", "get"))
	env.WaitCount(out, total+3, 60*time.Second)
	r1.Stop()
	s := r1.E.Stats()
	if !failed.Load() || s.Aborted == 0 {
		t.Fatalf("no commit failed: %+v", s)
	}
	want := map[string]string{"a": "-", "b": "2", "c": "3"}
	outs := env.Read(out)
	if len(outs) != total+3 {
		t.Fatalf("%d outputs, want %d (each record once)", len(outs), total+3)
	}
	local := map[string]string{}
	for _, r := range outs[total:] {
		local[string(r.Key)] = string(r.Value)
	}
	if fmt.Sprint(local) != fmt.Sprint(want) {
		t.Errorf("local state after the rewind: %v, want %v", local, want)
	}

	last := map[string]string{}
	for _, r := range env.Read(changelog) {
		v := "-"
		if r.Value != nil {
			v = string(r.Value)
		}
		last[string(r.Key)] = v
	}
	for k, v := range want {
		if last[k] != v {
			t.Errorf("changelog's last %s: %q, want %q", k, last[k], v)
		}
	}

	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	env.ProduceRecords(rec("a", "get"), rec("b", "get"), rec("c", "get"))
	env.WaitCount(out, total+6, 90*time.Second)
	r2.Stop()
	restored := map[string]string{}
	for _, r := range env.Read(out)[total+3:] {
		restored[string(r.Key)] = string(r.Value)
	}
	if fmt.Sprint(restored) != fmt.Sprint(want) {
		t.Errorf("restored state: %v, want %v", restored, want)
	}
}
