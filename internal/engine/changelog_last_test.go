package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// applyTopology applies each record's value to a store: "put:<v>" writes
// the key, "del" deletes it, "get" only reads it; every record forwards
// what the key holds afterwards ("-" for nothing).
func applyTopology(in, out string) *topology.Topology {
	tp := topology.New("kv")
	kv := topology.Store(tp, "kv", serde.String(), serde.String())
	src := topology.Source(tp, in, serde.String(), serde.String())
	applied := topology.Process(src, "apply", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		switch {
		case strings.HasPrefix(r.Value, "put:"):
			if err := kv.Put(ctx, r.Key, strings.TrimPrefix(r.Value, "put:")); err != nil {
				return err
			}
		case r.Value == "del":
			if err := kv.Delete(ctx, r.Key); err != nil {
				return err
			}
		}
		v, ok, err := kv.Get(ctx, r.Key)
		if err != nil {
			return err
		}
		if !ok {
			v = "-"
		}
		return ctx.Forward(topology.Record[string, string]{Key: r.Key, Value: v})
	}, kv)
	topology.To(applied, out, serde.String(), serde.String())
	return tp
}

// TestChangelogCarriesTheLastWriteOfEachKeyPerTransaction writes one key
// five times and puts then deletes another, each record in an input batch
// of its own (the next record is produced once the previous one's output
// is seen, uncommitted), all in one transaction. The changelog must hold
// one record per key, the last value and a tombstone, and a replica
// restoring from it must hold the same state.
func TestChangelogCarriesTheLastWriteOfEachKeyPerTransaction(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	changelog := app + "-kv-changelog"
	env.CreateTopic(in, 1)
	g := compile(t, applyTopology(in, out))
	ops := []struct{ key, op string }{
		{"a", "put:1"}, {"b", "put:x"}, {"a", "put:2"}, {"a", "put:3"}, {"b", "del"}, {"a", "put:4"}, {"a", "put:5"},
	}
	cfg := stateConfig(env, app, "r1", t.TempDir())
	cfg.CommitInterval = 20 * time.Second // below the transaction timeout
	cfg.CommitRecords = len(ops)          // the last op commits
	r1 := env.Start(cfg, g)
	seen := uncommittedReader(t, env.Brokers, out)
	for i, o := range ops {
		env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte(o.key), Value: []byte(o.op)})
		waitFor(t, fmt.Sprintf("the output of record %d, uncommitted", i), 60*time.Second, func() bool { return seen() > i })
	}
	env.WaitCount(out, len(ops), 60*time.Second)
	r1.Stop()
	if n := len(env.Read(out)); n != len(ops) {
		t.Fatalf("%d outputs, want %d", n, len(ops))
	}
	got := map[string][]string{}
	for _, r := range env.Read(changelog) {
		v := "<tombstone>"
		if r.Value != nil {
			v = string(r.Value)
		}
		got[string(r.Key)] = append(got[string(r.Key)], v)
	}
	if fmt.Sprint(got["a"]) != "[5]" || fmt.Sprint(got["b"]) != "[<tombstone>]" || len(got) != 2 {
		t.Errorf("changelog holds %v, want a: [5] and b: [<tombstone>] (one record per key per transaction)", got)
	}

	// A replica with no local state restores the store from the changelog.
	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte("a"), Value: []byte("get")}, &kgo.Record{Topic: in, Key: []byte("b"), Value: []byte("get")})
	env.WaitCount(out, len(ops)+2, 60*time.Second)
	r2.Stop()
	if s := r2.E.Stats(); s.Restored == 0 {
		t.Errorf("r2 restored nothing: %+v", s)
	}
	outs := env.Read(out)
	restored := map[string]string{}
	for _, r := range outs[len(ops):] {
		restored[string(r.Key)] = string(r.Value)
	}
	if restored["a"] != "5" || restored["b"] != "-" {
		t.Errorf("after a restore a = %q, b = %q; want 5 and nothing", restored["a"], restored["b"])
	}
}

// uncommittedReader follows topic read_uncommitted and returns a function
// that tells how many records it has seen so far.
func uncommittedReader(t *testing.T, brokers []string, topic string) func() int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	n := 0
	return func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		n += cl.PollFetches(ctx).NumRecords()
		return n
	}
}
