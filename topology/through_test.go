package topology_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/graph"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// byKey re-keys a record by its value, as a stage before Through would.
func byValue(k, v string) (string, string, error) { return v, v, nil }

func TestThroughValidates(t *testing.T) {
	tp := build(t, "through", func(tp *topology.Topology) {
		in := topology.Source(tp, "in", serde.String(), serde.String())
		moved := topology.Through(topology.Map(in, byValue), "by-value", serde.String(), serde.String())
		topology.To(moved, "out", serde.String(), serde.String())
	})
	if err := tp.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.SubTopologies) != 2 {
		t.Fatalf("%d sub-topologies, want 2 (the writer and the reader of the topic)", len(g.SubTopologies))
	}
	// The topic is the user's: not internal, and not renamed by the
	// application id.
	g = g.WithPrefix("app")
	if got := g.ThroughTopics(); !slices.Equal(got, []string{"by-value"}) {
		t.Errorf("ThroughTopics = %v, want [by-value]", got)
	}
	if got := g.InternalTopics(); len(got) != 0 {
		t.Errorf("InternalTopics = %v, want none", got)
	}
	if got := g.LinkTopics(); !slices.Equal(got, []string{"by-value"}) {
		t.Errorf("LinkTopics = %v, want [by-value]", got)
	}
	if w, r := g.WriterOf("by-value"), g.SubTopologyOf("by-value"); w == r {
		t.Errorf("the topic is written and read by sub-topology %d: want two", w)
	}
	d := tp.Describe()
	for _, want := range []string{"sink sink-1 -> topic by-value [string/string]", "sub-topology 1 (sources: by-value)", "source source-by-value <- topic by-value"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe lacks %q:\n%s", want, d)
		}
	}
}

// A topic is a loop only when what reads it leads back to what writes it.
func TestLoops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(*topology.Topology)
		want  []string // each is one joined problem, in order
	}{
		{"written by one sub-topology, read by another", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			topology.To(in, "mid", serde.String(), serde.String())
			mid := topology.Source(tp, "mid", serde.String(), serde.String())
			topology.To(mid, "out", serde.String(), serde.String())
		}, nil},
		{"through twice in a row", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			a := topology.Through(in, "a", serde.String(), serde.String())
			b := topology.Through(a, "b", serde.String(), serde.String())
			topology.To(b, "out", serde.String(), serde.String())
		}, nil},
		{"a sub-topology writes what it reads", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			topology.To(in, "in", serde.String(), serde.String())
		}, []string{`topology: topic "in" is both read and written: a loop`}},
		{"through leads back to the input", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			mid := topology.Through(in, "mid", serde.String(), serde.String())
			topology.To(mid, "in", serde.String(), serde.String())
		}, []string{
			`topology: topic "mid" is both read and written: a loop through sub-topologies 1 -> 0 -> 1`,
			`topology: topic "in" is both read and written: a loop through sub-topologies 0 -> 1 -> 0`,
		}},
		{"three sub-topologies in a cycle", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			b := topology.Through(topology.Through(in, "a", serde.String(), serde.String()), "b", serde.String(), serde.String())
			topology.To(b, "in", serde.String(), serde.String())
		}, []string{
			`topology: topic "a" is both read and written: a loop through sub-topologies 1 -> 2 -> 0 -> 1`,
			`topology: topic "b" is both read and written: a loop through sub-topologies 2 -> 0 -> 1 -> 2`,
			`topology: topic "in" is both read and written: a loop through sub-topologies 0 -> 1 -> 2 -> 0`,
		}},
		{"a repartition leads back to the input", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			moved := topology.Repartition(in, "moved", serde.String(), serde.String())
			topology.To(moved, "in", serde.String(), serde.String())
		}, []string{
			`topology: topic "moved-repartition" is both read and written: a loop through sub-topologies 1 -> 0 -> 1`,
			`topology: topic "in" is both read and written: a loop through sub-topologies 0 -> 1 -> 0`,
		}},
		{"a through stream merged with its own input", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			mid := topology.Through(in, "mid", serde.String(), serde.String())
			topology.To(topology.Merge(in, mid), "out", serde.String(), serde.String())
		}, []string{`topology: topic "mid" is both read and written: a loop`}},
		{"through a topic the topology reads", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			other := topology.Source(tp, "other", serde.String(), serde.String())
			topology.To(other, "out", serde.String(), serde.String())
			topology.To(topology.Through(in, "other", serde.String(), serde.String()), "out", serde.String(), serde.String())
		}, []string{
			`topology: through: topic "other" is read twice`,
			`topology: node name "source-other" is used twice`,
		}},
		{"a source of a through topic", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			topology.To(topology.Through(in, "mid", serde.String(), serde.String()), "out", serde.String(), serde.String())
			again := topology.Source(tp, "mid", serde.String(), serde.String())
			topology.To(again, "out-2", serde.String(), serde.String())
		}, []string{
			`topology: source: topic "mid" is read twice`,
			`topology: node name "source-mid" is used twice`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := build(t, "loops", tc.build)
			got := problems(tp.Validate())
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Validate:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
