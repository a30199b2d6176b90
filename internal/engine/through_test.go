package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// throughTopology re-keys each record by its value, writes it through the
// user topic mid and reads it back in a second sub-topology that copies
// it to out.
func throughTopology(in, mid, out string) *topology.Topology {
	tp := topology.New("through")
	src := topology.Source(tp, in, serde.String(), serde.String())
	byValue := topology.Map(src, func(k, v string) (string, string, error) { return v, v, nil })
	back := topology.Through(byValue, mid, serde.String(), serde.String())
	topology.To(topology.MapValues(back, func(v string) (string, error) { return v, nil }), out, serde.String(), serde.String())
	return tp
}

// A topology writes a user topic and reads it back. A replica crashes in
// the middle (no commit, no abort) and comes back: read_committed, every
// input record is in the through topic once and in the output once, the
// output's lineage names the input record (not the through topic), and
// the through topic, created by the application with the partition count
// of its writer, is partitioned by the new keys.
func TestThroughExactlyOnce(t *testing.T) {
	env := enginetest.New(t)
	in, mid, out, app := env.Name("in"), env.Name("mid"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 3)
	const n = 3000
	env.Produce(in, 0, n)

	g := compile(t, throughTopology(in, mid, out))
	r := env.Start(env.Config(app, "r1"), g)
	waitFor(t, "outputs", 60*time.Second, func() bool { return r.E.Stats().RecordsOut > 500 })
	r.Crash()
	r = env.Start(env.Config(app, "r1"), g)
	env.WaitCount(out, n, 120*time.Second)
	// The second leg's offsets commit too: past every record of the
	// through topic (its end offsets also count transaction markers).
	waitFor(t, "the through topic's offsets committed", 60*time.Second, func() bool {
		committed := env.CommittedOffsets(app, mid)
		for _, rec := range env.Read(mid) {
			if committed[rec.Partition] <= rec.Offset {
				return false
			}
		}
		return true
	})
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}

	rep := env.Verify(in, out)
	if rep.Input != n || rep.Output != n {
		t.Errorf("counts: %s", rep)
	}
	if got := env.Partitions(mid); got != 3 {
		t.Errorf("through topic has %d partitions, want 3 (its writer's)", got)
	}
	checkThroughTopic(t, env, in, mid, n, 3)
	if n := len(env.Read(app + "-rejected")); n != 0 {
		t.Errorf("%d rejected records, want 0", n)
	}
}

// A through topic that exists is used as it is: its partition count is
// not the writer's, records are spread over its own partitions by key, and
// the reading sub-topology has a task per partition of it.
func TestThroughUsesExistingTopic(t *testing.T) {
	env := enginetest.New(t)
	in, mid, out, app := env.Name("in"), env.Name("mid"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	env.CreateTopic(mid, 5)
	const n = 1000
	env.Produce(in, 0, n)

	r := env.Start(env.Config(app, "r1"), compile(t, throughTopology(in, mid, out)))
	env.WaitCount(out, n, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	env.Verify(in, out)
	if got := env.Partitions(mid); got != 5 {
		t.Errorf("through topic has %d partitions, want the 5 it was created with", got)
	}
	if got := env.Partitions(out); got != 5 {
		t.Errorf("output has %d partitions, want 5 (those of the through topic its writer reads)", got)
	}
	checkThroughTopic(t, env, in, mid, n, 5)
}

// checkThroughTopic checks that the through topic holds n records once
// each (read_committed), each on the partition its key hashes to among
// parts, each carrying the lineage of an input record.
func checkThroughTopic(t *testing.T, env *enginetest.Env, in, mid string, n int, parts int32) {
	t.Helper()
	recs := env.Read(mid)
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[string(r.Value)] {
			t.Errorf("through topic holds %q twice", r.Value)
		}
		seen[string(r.Value)] = true
		if want := wire.Partition(r.Key, -1, parts); r.Partition != want {
			t.Errorf("key %q on partition %d, want %d", r.Key, r.Partition, want)
		}
		if src := r.Headers[wire.HeaderSource]; !strings.HasPrefix(src, in+"/") {
			t.Errorf("record %s/%d/%d has lineage %q, want an input record of %s", r.Topic, r.Partition, r.Offset, src, in)
		}
	}
	if len(recs) != n || len(seen) != n {
		t.Errorf("through topic holds %d records (%d distinct), want %d", len(recs), len(seen), n)
	}
}
