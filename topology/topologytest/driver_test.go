package topologytest_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

type update struct {
	Order   string `json:"order"`
	Version uint64 `json:"version"`
}

func newDriver(t *testing.T, tp *topology.Topology, cfg topologytest.Config) *topologytest.Driver {
	t.Helper()
	d, err := topologytest.New(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func reasons(rs []topologytest.Rejection) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Reason+"@"+r.Node)
	}
	return out
}

// Source → Dedup → LatestVersion → Count → To, tested with the driver
// alone: duplicates, conflicts and stale versions are rejected with their
// reasons, the rest are counted per key.
func TestGatesAndCount(t *testing.T) {
	tp := topology.New("updates")
	in := topology.Source(tp, "updates", serde.String(), serde.JSON[update]())
	fresh := topology.Dedup(in, "event-ids", topology.EventIDHeader("event-id"), time.Hour)
	current := topology.LatestVersion(fresh, "versions", func(_ string, u update) (string, uint64) { return u.Order, u.Version })
	counts := topology.Count(current, "per-customer", serde.String())
	topology.To(counts, "counts", serde.String(), serde.Int64())

	d := newDriver(t, tp, topologytest.Config{})
	updates := topologytest.Input(d, "updates", serde.String(), serde.JSON[update]())
	out := topologytest.Output(d, "counts", serde.String(), serde.Int64())
	pipe := func(customer, eventID string, u update) {
		t.Helper()
		err := updates.PipeRecord(topologytest.Record[string, update]{Key: customer, Value: u,
			Headers: topology.Headers{{Key: "event-id", Value: []byte(eventID)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	pipe("c1", "e1", update{"o1", 1})
	pipe("c1", "e1", update{"o1", 1}) // duplicate
	pipe("c1", "e1", update{"o1", 9}) // conflict: same id, other payload
	pipe("c1", "e2", update{"o1", 3})
	pipe("c1", "e3", update{"o1", 2}) // stale
	pipe("c2", "e4", update{"o2", 1})
	pipe("c1", "e3", update{"o1", 2}) // stale again, not a duplicate: the stale one was not remembered

	got, err := out.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var counted []string
	for _, r := range got {
		counted = append(counted, r.Key+"="+string(rune('0'+r.Value)))
	}
	if want := []string{"c1=1", "c1=2", "c2=1"}; !slices.Equal(counted, want) {
		t.Errorf("counts %v, want %v", counted, want)
	}
	if got, want := reasons(d.Rejections()), []string{"duplicate@event-ids", "conflict@event-ids", "stale@versions", "stale@versions"}; !slices.Equal(got, want) {
		t.Errorf("rejections %v, want %v", got, want)
	}
	if seen, _ := d.Seen("event-ids", 0, "e3"); seen {
		t.Error("the stale update's event id is remembered")
	}
	if v, ok, _ := d.Version("versions", 0, "o1"); !ok || v != 3 {
		t.Errorf("version of o1 = %d %v, want 3", v, ok)
	}
	if more, _ := out.ReadAll(); len(more) != 0 {
		t.Errorf("ReadAll again returned %d records, want none", len(more))
	}
}

// One input expands into several records; a gate rejects one of them and
// its siblings flow on.
func TestFlatMapChildRejectedAlone(t *testing.T) {
	tp := topology.New("split")
	in := topology.Source(tp, "in", serde.String(), serde.String())
	parts := topology.FlatMap(in, func(_ string, v string) ([]topology.KeyValue[string, update], error) {
		var kvs []topology.KeyValue[string, update]
		for _, f := range strings.Split(v, ",") {
			o, ver, _ := strings.Cut(f, ":")
			kvs = append(kvs, topology.KeyValue[string, update]{Key: o, Value: update{o, uint64(ver[0] - '0')}})
		}
		return kvs, nil
	})
	current := topology.LatestVersion(parts, "versions", func(_ string, u update) (string, uint64) { return u.Order, u.Version })
	topology.To(current, "out", serde.String(), serde.JSON[update]())

	d := newDriver(t, tp, topologytest.Config{})
	input := topologytest.Input(d, "in", serde.String(), serde.String())
	for _, v := range []string{"o1:3", "o2:5,o1:1", "o2:5"} {
		if err := input.Pipe("k", v); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := topologytest.Output(d, "out", serde.String(), serde.JSON[update]()).ReadAll()
	var vs []update
	for _, r := range got {
		vs = append(vs, r.Value)
	}
	if want := []update{{"o1", 3}, {"o2", 5}}; !slices.Equal(vs, want) {
		t.Errorf("output %v, want %v", vs, want)
	}
	rej := d.Rejections()
	if got, want := reasons(rej), []string{"stale@versions", "stale@versions"}; !slices.Equal(got, want) {
		t.Errorf("rejections %v, want %v", got, want)
	}
	if len(rej) == 2 && (rej[0].Source != "in/0/1" || rej[1].Source != "in/0/2" || string(rej[0].Value) != "o2:5,o1:1") {
		t.Errorf("rejections name %q, %q with value %q; want in/0/1 and in/0/2 and the input's value", rej[0].Source, rej[1].Source, rej[0].Value)
	}
}

// Dedup retention is measured in stream time; a record stamped far ahead
// of the wall clock moves it only to the wall clock plus the allowed skew,
// and moving the wall clock moves that bound.
func TestStreamTimeAndWallClock(t *testing.T) {
	tp := topology.New("dedup")
	in := topology.Source(tp, "in", serde.String(), serde.String())
	topology.To(topology.Dedup(in, "ids", topology.EventIDHeader("id"), time.Hour), "out", serde.String(), serde.String())
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := newDriver(t, tp, topologytest.Config{WallClock: start, MaxClockSkew: time.Minute})
	input := topologytest.Input(d, "in", serde.String(), serde.String())
	pipe := func(id string, ts time.Time) {
		t.Helper()
		if err := input.PipeRecord(topologytest.Record[string, string]{Key: "k", Value: id, Timestamp: ts,
			Headers: topology.Headers{{Key: "id", Value: []byte(id)}}}); err != nil {
			t.Fatal(err)
		}
	}
	pipe("e1", start)
	pipe("e2", start.AddDate(50, 0, 0))
	if got, want := d.StreamTime("in", 0), start.Add(time.Minute); !got.Equal(want) {
		t.Errorf("stream time %v, want the wall clock plus the skew, %v", got, want)
	}
	pipe("e1", start.Add(time.Second)) // still a duplicate
	d.AdvanceWallClock(2 * time.Hour)
	pipe("e3", start.AddDate(50, 0, 0)) // stream time to start+2h1m: e1 expires
	pipe("e1", start.Add(2*time.Second))
	got, _ := topologytest.Output(d, "out", serde.String(), serde.String()).ReadAll()
	var ids []string
	for _, r := range got {
		ids = append(ids, r.Value)
	}
	if want := []string{"e1", "e2", "e3", "e1"}; !slices.Equal(ids, want) {
		t.Errorf("passed %v, want %v", ids, want)
	}
	if got, want := reasons(d.Rejections()), []string{"duplicate@ids"}; !slices.Equal(got, want) {
		t.Errorf("rejections %v, want %v", got, want)
	}
}

// Records go through a repartition topic to the sub-topology that counts
// them, within one Pipe; stores can be seeded and read.
func TestRepartitionAndStores(t *testing.T) {
	tp := topology.New("rekey")
	in := topology.Source(tp, "in", serde.String(), serde.String())
	byValue := topology.Map(in, func(_ string, v string) (string, string, error) { return v, v, nil })
	moved := topology.Repartition(byValue, "by-value", serde.String(), serde.String())
	topology.To(topology.Count(moved, "counts", serde.String()), "out", serde.String(), serde.Int64())
	store := topology.Store(tp, "seeded", serde.String(), serde.Int64())
	tagged := topology.Process(in, "tag", func(ctx topology.Context[string, int64], r topology.Record[string, string]) error {
		n, _, err := store.Get(ctx, r.Key)
		if err != nil {
			return err
		}
		if err := store.Put(ctx, r.Key, n+1); err != nil {
			return err
		}
		return ctx.Forward(topology.Record[string, int64]{Key: r.Key, Value: n + 1})
	}, store)
	topology.To(tagged, "tagged", serde.String(), serde.Int64())

	d := newDriver(t, tp, topologytest.Config{Partitions: 3})
	if err := topologytest.Put(d, store, 1, "k", 40); err != nil {
		t.Fatal(err)
	}
	input := topologytest.Input(d, "in", serde.String(), serde.String())
	for i, v := range []string{"a", "b", "a", "a"} {
		if err := input.PipeRecord(topologytest.Record[string, string]{Key: "k", Value: v, Partition: int32(i % 3)}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := topologytest.Output(d, "out", serde.String(), serde.Int64()).ReadAll()
	last := map[string]int64{}
	for _, r := range got {
		last[r.Key] = r.Value
		if !strings.HasPrefix(r.Source, "in/") {
			t.Errorf("output lineage %q does not name the input", r.Source)
		}
	}
	if last["a"] != 3 || last["b"] != 1 {
		t.Errorf("counts %v, want a=3 b=1 (one task per key after the repartition)", last)
	}
	if n, ok, err := topologytest.Get(d, store, 1, "k"); err != nil || !ok || n != 41 {
		t.Errorf("seeded store on partition 1 = %d %v %v, want 41", n, ok, err)
	}
}

// Bytes the source's codec cannot read, and a processing error, are
// rejected with the runtime's reasons.
func TestRuntimeRejections(t *testing.T) {
	tp := topology.New("fail")
	in := topology.Source(tp, "in", serde.String(), serde.Int64())
	checked := topology.MapValues(in, func(v int64) (int64, error) {
		if v < 0 {
			return 0, errNegative
		}
		return v, nil
	})
	topology.To(checked, "out", serde.String(), serde.Int64())
	d := newDriver(t, tp, topologytest.Config{})
	input := topologytest.Input(d, "in", serde.String(), serde.Int64())
	if err := input.PipeRaw([]byte("k"), []byte("short"), nil, time.Time{}, 0); err != nil {
		t.Fatal(err)
	}
	if err := input.Pipe("k", -1); err != nil {
		t.Fatal(err)
	}
	rej := d.Rejections()
	if got, want := reasons(rej), []string{topologytest.ReasonUndecodable + "@", topologytest.ReasonProcessingError + "@"}; !slices.Equal(got, want) {
		t.Errorf("rejections %v, want %v", got, want)
	}
	if len(rej) == 2 && !strings.Contains(rej[1].Error, "negative") {
		t.Errorf("processing error %q does not carry the cause", rej[1].Error)
	}
}

type negativeError struct{}

func (negativeError) Error() string { return "negative value" }

var errNegative = negativeError{}
