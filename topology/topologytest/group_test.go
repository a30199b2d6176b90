package topologytest_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

type view struct {
	User string `json:"user"`
	Page string `json:"page"`
}

// lastByKey keeps the last value forwarded for each key.
func lastByKey[K comparable, V any](t *testing.T, out *topologytest.OutputTopic[K, V]) (map[K]V, int) {
	t.Helper()
	rs, err := out.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	last := map[K]V{}
	for _, r := range rs {
		last[r.Key] = r.Value
	}
	return last, len(rs)
}

// GroupBy re-keys the records and goes through its repartition topic, so
// the count of a new key sees its records from every input partition;
// counted without it, each partition would count its own part.
func TestGroupByCountsAcrossPartitions(t *testing.T) {
	tp := topology.New("views")
	in := topology.Source(tp, "views", serde.String(), serde.JSON[view]())
	byPage := topology.GroupBy(in, "by-page", func(_ string, v view) string { return v.Page }, serde.String(), serde.JSON[view]())
	topology.To(byPage.Count("views-per-page"), "page-counts", serde.String(), serde.Int64())
	if desc := tp.Describe(); !strings.Contains(desc, "by-page-repartition") {
		t.Fatalf("no repartition topic in\n%s", desc)
	}

	d := newDriver(t, tp, topologytest.Config{Partitions: 4})
	views := topologytest.Input(d, "views", serde.String(), serde.JSON[view]())
	for i, v := range []view{{"u1", "home"}, {"u2", "home"}, {"u3", "cart"}, {"u4", "home"}, {"u5", "cart"}, {"u6", "faq"}} {
		if err := views.PipeRecord(topologytest.Record[string, view]{Key: v.User, Value: v, Partition: int32(i % 4)}); err != nil {
			t.Fatal(err)
		}
	}
	last, n := lastByKey(t, topologytest.Output(d, "page-counts", serde.String(), serde.Int64()))
	if want := map[string]int64{"home": 3, "cart": 2, "faq": 1}; n != 6 || !maps.Equal(last, want) {
		t.Errorf("%d updates ending in %v, want 6 ending in %v", n, last, want)
	}
}

// GroupByKey repartitions only when a stage before it may have changed
// the key: straight after a source it keeps the records where they are.
func TestGroupByKeyRepartitionsOnlyAfterAKeyChange(t *testing.T) {
	build := func(rekey bool) *topology.Topology {
		tp := topology.New("views")
		in := topology.Source(tp, "views", serde.String(), serde.JSON[view]())
		if rekey {
			in = topology.Map(in, func(_ string, v view) (string, view, error) { return v.Page, v, nil })
		}
		g := topology.GroupByKey(in, "grouped", serde.String(), serde.JSON[view]())
		topology.To(g.Count("counts"), "counts", serde.String(), serde.Int64())
		return tp
	}
	if desc := build(false).Describe(); strings.Contains(desc, "repartition") {
		t.Errorf("GroupByKey after a source repartitions:\n%s", desc)
	}
	tp := build(true)
	if desc := tp.Describe(); !strings.Contains(desc, "grouped-repartition") {
		t.Errorf("GroupByKey after a Map does not repartition:\n%s", desc)
	}
	d := newDriver(t, tp, topologytest.Config{Partitions: 3})
	views := topologytest.Input(d, "views", serde.String(), serde.JSON[view]())
	for i := range 9 {
		if err := views.PipeRecord(topologytest.Record[string, view]{Key: "u", Value: view{"u", []string{"a", "b"}[i%2]}, Partition: int32(i % 3)}); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := lastByKey(t, topologytest.Output(d, "counts", serde.String(), serde.Int64()))
	if want := map[string]int64{"a": 5, "b": 4}; !maps.Equal(last, want) {
		t.Errorf("counts %v, want %v", last, want)
	}
}

// Reduce keeps a key's first value as its aggregate; Aggregate starts
// from its initializer.
func TestGroupedReduceAndAggregate(t *testing.T) {
	tp := topology.New("numbers")
	in := topology.Source(tp, "numbers", serde.String(), serde.Int64())
	g := topology.GroupByKey(in, "numbers-by-key", serde.String(), serde.Int64())
	topology.To(g.Reduce("max", func(agg, v int64) (int64, error) { return max(agg, v), nil }), "max", serde.String(), serde.Int64())
	pages := topology.Aggregate(g, "seen", serde.JSON[[]int64](), func() []int64 { return []int64{} },
		func(_ string, v int64, agg []int64) ([]int64, error) { return append(agg, v), nil })
	topology.To(pages, "seen", serde.String(), serde.JSON[[]int64]())

	d := newDriver(t, tp, topologytest.Config{})
	numbers := topologytest.Input(d, "numbers", serde.String(), serde.Int64())
	for _, n := range []int64{-5, -9, -2, -7} {
		if err := numbers.Pipe("k", n); err != nil {
			t.Fatal(err)
		}
	}
	maxes, err := topologytest.Output(d, "max", serde.String(), serde.Int64()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range maxes {
		got = append(got, r.Value)
	}
	// A reduce starting from zero would say 0 throughout.
	if want := []int64{-5, -5, -2, -2}; !slices.Equal(got, want) {
		t.Errorf("maxima %v, want %v", got, want)
	}
	last, _ := lastByKey(t, topologytest.Output(d, "seen", serde.String(), serde.JSON[[]int64]()))
	if want := []int64{-5, -9, -2, -7}; !slices.Equal(last["k"], want) {
		t.Errorf("aggregate %v, want %v", last["k"], want)
	}
}

// Validate refuses grouping mistakes, all at once.
func TestGroupingMistakes(t *testing.T) {
	tp := topology.New("bad")
	in := topology.Source(tp, "in", serde.String(), serde.String())
	topology.GroupByKey(in, "", serde.String(), serde.String())
	topology.GroupBy(in, "no-key-fn", (func(string, string) string)(nil), serde.String(), serde.String())
	topology.GroupBy(in, "no-codec", func(k, _ string) string { return k }, nil, serde.String())
	g := topology.GroupByKey(in, "ok", serde.String(), serde.String())
	topology.To(g.Reduce("no-fn", nil), "out", serde.String(), serde.String())
	topology.Aggregate(g, "no-init", serde.Int64(), nil, func(string, string, int64) (int64, error) { return 0, nil })
	err := tp.Validate()
	if err == nil {
		t.Fatal("Validate accepted the mistakes")
	}
	for _, want := range []string{
		`group-by-key: name is empty`,
		`group-by "no-key-fn": key function is nil`,
		`group-by "no-codec": key codec is nil`,
		`reduce "no-fn": function is nil`,
		`aggregate "no-init": initializer and adder must not be nil`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}
