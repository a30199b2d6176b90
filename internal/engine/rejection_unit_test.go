package engine_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// The unit of rejection is one record as it flows: these tests each run a
// topology on the embedded broker in which a gate rejects one record of
// several that one input produced, and check that its siblings' outputs
// and state survive and that the rejected record leaves no state behind.

// update is "entity:version".
type update struct {
	entity  string
	version uint64
}

func parseUpdates(v string) ([]topology.KeyValue[string, update], error) {
	var out []topology.KeyValue[string, update]
	for _, f := range strings.Split(v, ",") {
		entity, ver, ok := strings.Cut(f, ":")
		n, err := strconv.ParseUint(ver, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("bad update %q", f)
		}
		out = append(out, topology.KeyValue[string, update]{Key: entity, Value: update{entity, n}})
	}
	return out, nil
}

func record(topic, key, value string, headers ...string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: headers[i], Value: []byte(headers[i+1])})
	}
	return r
}

// runUntil starts one replica, waits for the output and rejected counts and
// stops it.
func runUntil(t *testing.T, env *enginetest.Env, app string, tp *topology.Topology, counts map[string]int) *enginetest.Replica {
	t.Helper()
	g := compile(t, tp)
	r := env.Start(stateConfig(env, app, "r1", t.TempDir()), g)
	for topic, n := range counts {
		env.WaitCount(topic, n, 60*time.Second)
	}
	// Every input record's transaction has committed (its offsets with
	// its outputs), so anything more than expected shows now.
	for _, in := range g.SourceTopics() {
		end := env.EndOffsets(in)
		waitFor(t, "the input's offsets committed", 60*time.Second, func() bool { return maps.Equal(env.CommittedOffsets(app, in), end) })
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

func reasons(rs []verify.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Headers[wire.HeaderRejectReason]+"@"+r.Headers[wire.HeaderRejectNode])
	}
	slices.Sort(out)
	return out
}

// One input expands to [o2 v5, o1 v1] where o1 is stale: o2 v5 is output
// and o1 v1 alone is rejected. A retry of o2 v5 is then stale, and o2 v5 is
// in the output exactly once.
func TestGateRejectsOneFlatMapChildOnly(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	tp := topology.New("versions")
	src := topology.Source(tp, in, serde.String(), serde.String())
	ups := topology.FlatMap(src, func(_ string, v string) ([]topology.KeyValue[string, update], error) { return parseUpdates(v) })
	current := topology.LatestVersion(ups, "versions", func(_ string, u update) (string, uint64) { return u.entity, u.version })
	shown := topology.MapValues(current, func(u update) (string, error) { return fmt.Sprintf("%s v%d", u.entity, u.version), nil })
	topology.To(shown, out, serde.String(), serde.String())

	env.ProduceRecords(
		record(in, "a", "o1:3"),
		record(in, "b", "o2:5,o1:1"),
		record(in, "c", "o2:5"),
	)
	runUntil(t, env, app, tp, map[string]int{out: 2, app + "-rejected": 2})

	var got []string
	for _, r := range env.Read(out) {
		got = append(got, string(r.Value))
	}
	if want := []string{"o1 v3", "o2 v5"}; !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
	if got, want := reasons(env.Read(app+"-rejected")), []string{"stale@versions", "stale@versions"}; !slices.Equal(got, want) {
		t.Errorf("rejections %q, want %q", got, want)
	}
}

// A fan-out: one branch counts every record, the other deduplicates. A
// duplicate is rejected on the dedup branch only; the count branch's
// output for it is kept, in step with its state.
func TestGateRejectsOneBranchOfAFanOut(t *testing.T) {
	env := enginetest.New(t)
	in, counts, fresh, app := env.Name("in"), env.Name("counts"), env.Name("fresh"), env.Name("app")
	env.CreateTopic(in, 1)
	tp := topology.New("fan-out")
	src := topology.Source(tp, in, serde.String(), serde.String())
	topology.To(topology.Count(src, "counts", serde.String()), counts, serde.String(), serde.Int64())
	topology.To(topology.Dedup(src, "ids", topology.EventIDHeader("event-id"), time.Hour), fresh, serde.String(), serde.String())

	env.ProduceRecords(
		record(in, "k", "v1", "event-id", "A"),
		record(in, "k", "v1", "event-id", "A"),
		record(in, "k", "v2", "event-id", "B"),
	)
	runUntil(t, env, app, tp, map[string]int{counts: 3, fresh: 2, app + "-rejected": 1})

	var got []int64
	for _, r := range env.Read(counts) {
		got = append(got, int64(binary.BigEndian.Uint64(r.Value)))
	}
	if want := []int64{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v (every record counted once, every count output)", got, want)
	}
	if n := len(env.Read(fresh)); n != 2 {
		t.Errorf("dedup branch output %d records, want 2", n)
	}
	if got, want := reasons(env.Read(app+"-rejected")), []string{"duplicate@ids"}; !slices.Equal(got, want) {
		t.Errorf("rejections %q, want %q", got, want)
	}
}

// FlatMap then Dedup by the input's event-id header: the first child
// passes, the second is a duplicate of it and is rejected alone.
func TestDedupRejectsALaterFlatMapChildOnly(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	tp := topology.New("split-dedup")
	src := topology.Source(tp, in, serde.String(), serde.String())
	parts := topology.FlatMap(src, func(k, v string) ([]topology.KeyValue[string, string], error) {
		var kvs []topology.KeyValue[string, string]
		for _, p := range strings.Split(v, ",") {
			kvs = append(kvs, topology.KeyValue[string, string]{Key: k, Value: p})
		}
		return kvs, nil
	})
	topology.To(topology.Dedup(parts, "ids", topology.EventIDHeader("event-id"), time.Hour), out, serde.String(), serde.String())

	env.ProduceRecords(record(in, "k", "x,y", "event-id", "E"))
	runUntil(t, env, app, tp, map[string]int{out: 1, app + "-rejected": 1})

	var got []string
	for _, r := range env.Read(out) {
		got = append(got, string(r.Value))
	}
	if want := []string{"x"}; !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
	if got, want := reasons(env.Read(app+"-rejected")), []string{"duplicate@ids"}; !slices.Equal(got, want) {
		t.Errorf("rejections %q, want %q", got, want)
	}
}

// Dedup then a version gate: a stale update is rejected, and the event id
// the dedup gate staged for it is rolled back with it, so the same update
// sent again is stale again, not a duplicate of something never output.
func TestRejectionRollsBackTheGatesBeforeIt(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	tp := topology.New("chain")
	src := topology.Source(tp, in, serde.String(), serde.String())
	fresh := topology.Dedup(src, "ids", topology.EventIDHeader("event-id"), time.Hour)
	current := topology.LatestVersion(fresh, "versions", func(k, v string) (string, uint64) {
		n, _ := strconv.ParseUint(v, 10, 64)
		return k, n
	})
	topology.To(current, out, serde.String(), serde.String())

	env.ProduceRecords(
		record(in, "o1", "2", "event-id", "A"),
		record(in, "o1", "1", "event-id", "B"),
		record(in, "o1", "1", "event-id", "B"),
	)
	r := runUntil(t, env, app, tp, map[string]int{out: 1, app + "-rejected": 2})

	if n := len(env.Read(out)); n != 1 {
		t.Errorf("output %d records, want 1", n)
	}
	if got, want := reasons(env.Read(app+"-rejected")), []string{"stale@versions", "stale@versions"}; !slices.Equal(got, want) {
		t.Errorf("rejections %q, want %q", got, want)
	}
	if s := r.E.Stats(); s.RecordsIn != 3 || s.RecordsOut != 1 || s.Rejected != 2 {
		t.Errorf("stats in %d out %d rejected %d, want 3, 1, 2", s.RecordsIn, s.RecordsOut, s.Rejected)
	}
}
