package topology_test

import (
	"fmt"
	"testing"

	"github.com/onceflow/onceflow/internal/graph"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

func twoBranches(tp *topology.Topology) {
	in := topology.Source(tp, "orders", serde.String(), serde.Int64())
	big := topology.Filter(in, func(_ string, v int64) bool { return v > 100 })
	topology.To(big, "big-orders", serde.String(), serde.Int64())
	text := topology.MapValues(in, func(v int64) (string, error) { return fmt.Sprint(v), nil })
	tagged := topology.Process(text, "tag", func(c topology.Context[string, string], r topology.Record[string, string]) error {
		return c.Forward(r)
	})
	topology.To(tagged, "order-text", serde.String(), serde.String())
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		topo  string
		build func(*topology.Topology)
		want  string
	}{
		{"two branches", "orders", twoBranches, `topology orders
  sub-topology 0 (sources: orders)
    source source-orders <- topic orders [string/int64]
      filter filter-1
        sink sink-1 -> topic big-orders [string/int64]
      map-values map-values-1
        process tag
          sink sink-2 -> topic order-text [string/string]
`},
		{"two sub-topologies", "pair", func(tp *topology.Topology) {
			a := topology.Source(tp, "a", serde.Bytes(), serde.Bytes())
			b := topology.Source(tp, "b", serde.String(), serde.JSON[map[string]int]())
			topology.To(a, "a-out", serde.Bytes(), serde.Bytes())
			topology.To(b, "b-out", serde.String(), serde.JSON[map[string]int]())
		}, `topology pair
  sub-topology 0 (sources: a)
    source source-a <- topic a [bytes/bytes]
      sink sink-1 -> topic a-out [bytes/bytes]
  sub-topology 1 (sources: b)
    source source-b <- topic b [string/json]
      sink sink-2 -> topic b-out [string/json]
`},
		{"problems are listed", "bad", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.Filter(in, func(string, int64) bool { return true })
			topology.To(in, "in", serde.String(), nil)
		}, `topology bad
  sub-topology 0 (sources: in)
    source source-in <- topic in [string/int64]
      filter filter-1
      sink sink-1 -> topic in []
  problems:
    - topology: to "in": value codec is nil
    - topology: filter "filter-1" leads nowhere: add an output with To
    - topology: topic "in" is both read and written: a loop
`},
		// Each source is printed once, under its own sub-topology, even
		// when a topic is read twice.
		{"topic read twice", "twice", func(tp *topology.Topology) {
			a := topology.Source(tp, "x", serde.String(), serde.Int64())
			topology.To(a, "y", serde.String(), serde.Int64())
			b := topology.Source(tp, "x", serde.Bytes(), serde.Bytes())
			topology.To(b, "z", serde.Bytes(), serde.Bytes())
		}, `topology twice
  sub-topology 0 (sources: x)
    source source-x <- topic x [string/int64]
      sink sink-1 -> topic y [string/int64]
  sub-topology 1 (sources: x)
    source source-x <- topic x [bytes/bytes]
      sink sink-2 -> topic z [bytes/bytes]
  problems:
    - topology: source: topic "x" is read twice
    - topology: node name "source-x" is used twice
`},
		{"empty", "none", func(*topology.Topology) {}, `topology none
  problems:
    - topology: no source: add one with Source
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := build(t, tc.topo, tc.build)
			if got := tp.Describe(); got != tc.want {
				t.Fatalf("Describe() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestCompileSubTopologies(t *testing.T) {
	tp := build(t, "two", func(tp *topology.Topology) {
		a := topology.Source(tp, "clicks", serde.String(), serde.Bytes())
		topology.To(a, "clicks-copy", serde.String(), serde.Bytes())
		topology.To(topology.Filter(a, func(string, []byte) bool { return true }), "clicks-kept", serde.String(), serde.Bytes())
		b := topology.Source(tp, "orders", serde.String(), serde.Int64())
		doubled := topology.MapValues(b, func(v int64) (int64, error) { return 2 * v, nil })
		topology.To(doubled, "orders-doubled", serde.String(), serde.Int64())
		topology.To(b, "orders-doubled", serde.String(), serde.Int64())
	})
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if g.Name != "two" {
		t.Errorf("graph name %q, want two", g.Name)
	}
	if len(g.SubTopologies) != 2 {
		t.Fatalf("%d sub-topologies, want 2: %+v", len(g.SubTopologies), g.SubTopologies)
	}
	for i, want := range []struct {
		sources, sinks []string
	}{
		{[]string{"clicks"}, []string{"clicks-copy", "clicks-kept"}},
		{[]string{"orders"}, []string{"orders-doubled"}},
	} {
		st := g.SubTopologies[i]
		if st.ID != i {
			t.Errorf("sub-topology %d has ID %d", i, st.ID)
		}
		if fmt.Sprint(st.SourceTopics) != fmt.Sprint(want.sources) || fmt.Sprint(st.SinkTopics) != fmt.Sprint(want.sinks) {
			t.Errorf("sub-topology %d: sources %v sinks %v, want %v and %v", i, st.SourceTopics, st.SinkTopics, want.sources, want.sinks)
		}
		for _, topic := range want.sources {
			if got := g.SubTopologyOf(topic); got != i {
				t.Errorf("SubTopologyOf(%q) = %d, want %d", topic, got, i)
			}
			if src := g.Source(topic); src == nil || src.Topic != topic {
				t.Errorf("Source(%q) = %+v", topic, src)
			}
		}
	}
	if got := fmt.Sprint(g.SourceTopics()); got != "[clicks orders]" {
		t.Errorf("SourceTopics() = %s", got)
	}
	if got := fmt.Sprint(g.SinkTopics()); got != "[clicks-copy clicks-kept orders-doubled]" {
		t.Errorf("SinkTopics() = %s", got)
	}
	if g.Source("nope") != nil {
		t.Error("Source of an unknown topic is not nil")
	}
}
