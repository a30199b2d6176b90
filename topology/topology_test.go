package topology_test

import (
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// build runs fn and fails the test if building the topology panics.
func build(t *testing.T, name string, fn func(*topology.Topology)) *topology.Topology {
	t.Helper()
	tp := topology.New(name)
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("building the topology panicked: %v", r)
			}
		}()
		fn(tp)
	}()
	return tp
}

// problems splits a Validate error into its joined parts.
func problems(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

func copyTopology(tp *topology.Topology) {
	in := topology.Source(tp, "in", serde.Bytes(), serde.Bytes())
	topology.To(in, "out", serde.Bytes(), serde.Bytes())
}

func TestValidate(t *testing.T) {
	keep := func(string, int64) bool { return true }
	double := func(k string, v int64) (string, int64, error) { return k, 2 * v, nil }
	pass := func(topology.Context[string, int64], topology.Record[string, int64]) error { return nil }
	for _, tc := range []struct {
		name  string
		topo  string
		build func(*topology.Topology)
		want  []string // each is a substring of one joined problem, in order
	}{
		{"copy", "copy", copyTopology, nil},
		{"process may end the graph", "p", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.Process(in, "side-effect", pass)
		}, nil},
		{"branches", "b", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.Filter(in, keep), "a", serde.String(), serde.Int64())
			topology.To(topology.Map(in, double), "b", serde.String(), serde.Int64())
		}, nil},
		{"longest topic name", "long", func(tp *topology.Topology) {
			in := topology.Source(tp, strings.Repeat("a", 249), serde.Bytes(), serde.Bytes())
			topology.To(in, "A.b_c-9", serde.Bytes(), serde.Bytes())
		}, nil},
		{"empty topology", "empty", func(*topology.Topology) {}, []string{
			"topology: no source: add one with Source",
		}},
		{"empty topology name", " ", copyTopology, []string{
			"topology: topology name is empty",
		}},
		{"nil codecs", "c", func(tp *topology.Topology) {
			in := topology.Source[string, int64](tp, "in", nil, nil)
			topology.To[string, int64](in, "out", nil, nil)
		}, []string{
			`topology: source "in": key codec is nil`,
			`topology: source "in": value codec is nil`,
			`topology: to "out": key codec is nil`,
			`topology: to "out": value codec is nil`,
		}},
		{"one nil codec", "c", func(tp *topology.Topology) {
			in := topology.Source[string, int64](tp, "in", serde.String(), nil)
			topology.To(in, "out", nil, serde.Int64())
		}, []string{
			`source "in": value codec is nil`,
			`to "out": key codec is nil`,
		}},
		{"empty topics", "e", func(tp *topology.Topology) {
			in := topology.Source(tp, "", serde.Bytes(), serde.Bytes())
			topology.To(in, "", serde.Bytes(), serde.Bytes())
		}, []string{
			"topology: source: topic name is empty",
			"topology: to: topic name is empty",
		}},
		{"invalid topic characters", "chars", func(tp *topology.Topology) {
			in := topology.Source(tp, "my topic", serde.Bytes(), serde.Bytes())
			topology.To(in, "out/1", serde.Bytes(), serde.Bytes())
		}, []string{
			`source: topic name "my topic" has ' '`,
			`to: topic name "out/1" has '/'`,
		}},
		{"reserved and long topic names", "names", func(tp *topology.Topology) {
			in := topology.Source(tp, ".", serde.Bytes(), serde.Bytes())
			topology.To(in, "..", serde.Bytes(), serde.Bytes())
			topology.To(in, strings.Repeat("x", 250), serde.Bytes(), serde.Bytes())
			topology.To(in, "ünïcode", serde.Bytes(), serde.Bytes())
		}, []string{
			`source: topic name "." is not allowed`,
			`to: topic name ".." is not allowed`,
			"is longer than 249 characters",
			`to: topic name "ünïcode" has 'ü'`,
		}},
		{"topic read twice", "twice", func(tp *topology.Topology) {
			a := topology.Source(tp, "in", serde.Bytes(), serde.Bytes())
			topology.To(a, "out-a", serde.Bytes(), serde.Bytes())
			b := topology.Source(tp, "in", serde.String(), serde.String())
			topology.To(b, "out-b", serde.String(), serde.String())
		}, []string{
			`topology: source: topic "in" is read twice`,
			`node name "source-in" is used twice`,
		}},
		{"loop", "loop", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.Bytes(), serde.Bytes())
			topology.To(in, "in", serde.Bytes(), serde.Bytes())
		}, []string{
			`topology: topic "in" is both read and written: a loop`,
		}},
		{"filter leads nowhere", "f", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.Filter(in, keep)
		}, []string{
			`topology: filter "filter-1" leads nowhere: add an output with To`,
		}},
		{"every stateless stage must lead somewhere", "f", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.Map(in, double)
			topology.MapValues(in, func(v int64) (int64, error) { return v, nil })
			topology.FlatMap(in, func(string, int64) ([]topology.KeyValue[string, int64], error) { return nil, nil })
		}, []string{
			`map "map-1" leads nowhere`,
			`map-values "map-values-1" leads nowhere`,
			`flat-map "flat-map-1" leads nowhere`,
		}},
		{"unused source", "u", func(tp *topology.Topology) {
			copyTopology(tp)
			topology.Source(tp, "idle", serde.Bytes(), serde.Bytes())
		}, []string{
			`topology: source "idle" is not used`,
		}},
		{"duplicate process name", "d", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			a := topology.Process(in, "enrich", pass)
			b := topology.Process(in, "enrich", pass)
			topology.To(a, "out-a", serde.String(), serde.Int64())
			topology.To(b, "out-b", serde.String(), serde.Int64())
		}, []string{
			`topology: node name "enrich" is used twice`,
		}},
		{"process named like a generated name", "d", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			m := topology.Map(in, double)
			p := topology.Process(m, "map-1", pass)
			topology.To(p, "out", serde.String(), serde.Int64())
		}, []string{
			`node name "map-1" is used twice`,
		}},
		{"empty process names", "n", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.Process(in, "", pass), "a", serde.String(), serde.Int64())
			topology.To(topology.Process(in, "  ", pass), "b", serde.String(), serde.Int64())
		}, []string{
			"topology: process: name is empty",
			"topology: process: name is empty",
		}},
		{"nil functions", "nil", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			m := topology.Map[string, int64, string, int64](in, nil)
			mv := topology.MapValues[string, int64, int64](m, nil)
			f := topology.Filter(mv, nil)
			fm := topology.FlatMap[string, int64, string, int64](f, nil)
			p := topology.Process[string, int64, string, int64](fm, "last", nil)
			topology.To(p, "out", serde.String(), serde.Int64())
		}, []string{
			`topology: map "map-1": function is nil`,
			`topology: map-values "map-values-1": function is nil`,
			`topology: filter "filter-1": function is nil`,
			`topology: flat-map "flat-map-1": function is nil`,
			`topology: process "last": function is nil`,
		}},
		{"zero streams are ignored, the unused source is reported", "z", func(tp *topology.Topology) {
			topology.Source(tp, "in", serde.String(), serde.Int64())
			var zero topology.Stream[string, int64]
			topology.To(zero, "out", serde.String(), serde.Int64())
			topology.To(topology.Map(zero, double), "out2", serde.String(), serde.Int64())
			topology.To(topology.MapValues(zero, func(v int64) (int64, error) { return v, nil }), "out3", serde.String(), serde.Int64())
			topology.To(topology.Filter(zero, keep), "out4", serde.String(), serde.Int64())
			topology.To(topology.FlatMap(zero, func(string, int64) ([]topology.KeyValue[string, int64], error) { return nil, nil }), "out5", serde.String(), serde.Int64())
			topology.To(topology.Process(zero, "", pass), "out6", serde.String(), serde.Int64())
			topology.To(topology.Process[string, int64, string, int64](zero, "p", nil), "out7", serde.String(), serde.Int64())
		}, []string{
			`topology: source "in" is not used`,
		}},
		{"every mistake at once", "", func(tp *topology.Topology) {
			in := topology.Source[string, int64](tp, "in", nil, serde.Int64())
			topology.To(in, "bad topic", serde.String(), nil)
			topology.To(in, "in", serde.String(), serde.Int64())
			topology.Filter(in, keep)
			topology.Map[string, int64, string, int64](in, nil)
			topology.To(topology.Process(in, "", pass), "ok-1", serde.String(), serde.Int64())
			topology.To(topology.Process(in, "dup", pass), "ok-2", serde.String(), serde.Int64())
			topology.To(topology.Process(in, "dup", pass), "ok-3", serde.String(), serde.Int64())
			topology.Source(tp, "", serde.String(), serde.String())
		}, []string{
			"topology name is empty",
			`source "in": key codec is nil`,
			`to: topic name "bad topic" has ' '`,
			`to "bad topic": value codec is nil`,
			`map "map-1": function is nil`,
			"process: name is empty",
			`node name "dup" is used twice`,
			"source: topic name is empty",
			`filter "filter-1" leads nowhere`,
			`map "map-1" leads nowhere`,
			`topic "in" is both read and written`,
			`source "" is not used`,
		}},
		{"count after a key change", "rekey", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			moved := topology.Map(in, double)
			topology.To(topology.Count(moved, "per-key", serde.String()), "out", serde.String(), serde.Int64())
		}, []string{
			`topology: reduce "per-key" aggregates by key, but map "map-1" before it may change the key`,
		}},
		{"reduce after a key change through a filter and a merge", "rekey2", func(tp *topology.Topology) {
			a := topology.Source(tp, "a", serde.String(), serde.Int64())
			b := topology.Source(tp, "b", serde.String(), serde.Int64())
			moved := topology.Filter(topology.Map(a, double), keep)
			sum := topology.Sum(topology.Merge(moved, b), "sum", serde.String(), func(v int64) int64 { return v })
			topology.To(sum, "out", serde.String(), serde.Int64())
		}, []string{
			`reduce "sum" aggregates by key, but map "map-1" before it may change the key`,
		}},
		{"count after a repartition", "rekey-ok", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			moved := topology.Repartition(topology.Map(in, double), "by-key", serde.String(), serde.Int64())
			topology.To(topology.Count(moved, "per-key", serde.String()), "out", serde.String(), serde.Int64())
		}, nil},
		{"count after stages that keep the key", "keyed-ok", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			kept := topology.Dedup(topology.Filter(in, keep), "ids", topology.EventIDHeader("id"), time.Hour)
			topology.To(topology.Count(kept, "per-key", serde.String()), "out", serde.String(), serde.Int64())
		}, nil},
		{"a declared store no stage uses", "unused", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.Store(tp, "forgotten", serde.String(), serde.Int64())
			topology.Process(in, "side-effect", pass)
		}, []string{
			`topology: store "forgotten" is declared but no stage uses it`,
		}},
		{"stateful stages without names", "unnamed", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			fresh := topology.Dedup(in, "", topology.EventIDHeader("id"), time.Hour)
			current := topology.LatestVersion(fresh, " ", func(string, int64) (string, uint64) { return "", 0 })
			topology.To(current, "out", serde.String(), serde.Int64())
			topology.Count(in, "", serde.String())
		}, []string{
			`topology: dedup: name is empty: a stateful stage needs a name that stays the same across releases`,
			`topology: latest-version: name is empty`,
			`topology: reduce: name is empty`,
		}},
		{"a gate name that cannot name a changelog", "badname", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.Dedup(in, "my ids", topology.EventIDHeader("id"), time.Hour), "out", serde.String(), serde.Int64())
		}, []string{
			`topology: dedup "my ids": name has ' '`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := build(t, tc.topo, tc.build)
			err := tp.Validate()
			got := problems(err)
			if len(got) != len(tc.want) {
				t.Fatalf("Validate() gave %d problems, want %d:\n%v", len(got), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
				if !strings.HasPrefix(got[i], "topology: ") {
					t.Errorf("problem %d = %q: want prefix \"topology: \"", i, got[i])
				}
			}
			// Compile reports the same problems and returns no graph.
			g, cerr := graph.Compile(tp)
			if (cerr == nil) != (err == nil) {
				t.Fatalf("Compile error %v, Validate error %v", cerr, err)
			}
			if cerr != nil {
				if g != nil {
					t.Error("Compile returned a graph with an error")
				}
				if cerr.Error() != err.Error() {
					t.Errorf("Compile error %q != Validate error %q", cerr, err)
				}
			} else if g == nil {
				t.Error("Compile returned neither a graph nor an error")
			}
		})
	}
}

func TestNilTopology(t *testing.T) {
	var tp *topology.Topology
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v", r)
		}
	}()
	s := topology.Source(tp, "in", serde.String(), serde.String())
	m := topology.MapValues(s, func(v string) (string, error) { return v, nil })
	topology.To(m, "out", serde.String(), serde.String())
	if err := tp.Validate(); err == nil || err.Error() != "topology: nil topology" {
		t.Fatalf("Validate() on nil = %v, want \"topology: nil topology\"", err)
	}
	if _, err := graph.Compile(tp); err == nil {
		t.Fatal("Compile() on nil: want an error")
	}
	if got, want := tp.Describe(), "topology <nil>\n  problems:\n    - topology: nil topology\n"; got != want {
		t.Fatalf("Describe() on nil = %q, want %q", got, want)
	}
}

func TestName(t *testing.T) {
	if got := topology.New("orders").Name(); got != "orders" {
		t.Fatalf("Name() = %q", got)
	}
}

func TestHeadersGet(t *testing.T) {
	h := topology.Headers{
		{Key: "a", Value: []byte("1")},
		{Key: "b", Value: nil},
		{Key: "a", Value: []byte("2")},
	}
	for _, tc := range []struct {
		key    string
		want   string
		wantOK bool
	}{
		{"a", "2", true}, // the last one wins
		{"b", "", true},  // present with a null value
		{"c", "", false},
		{"A", "", false}, // keys are case-sensitive
	} {
		v, ok := h.Get(tc.key)
		if ok != tc.wantOK || string(v) != tc.want {
			t.Errorf("Get(%q) = %q, %v; want %q, %v", tc.key, v, ok, tc.want, tc.wantOK)
		}
	}
	if _, ok := topology.Headers(nil).Get("a"); ok {
		t.Error("Get on nil Headers found a header")
	}
}

func TestValidateIsRepeatable(t *testing.T) {
	tp := build(t, "r", func(tp *topology.Topology) {
		in := topology.Source(tp, "in", serde.String(), serde.Int64())
		topology.Filter(in, func(string, int64) bool { return true })
	})
	first := tp.Validate()
	second := tp.Validate()
	if first == nil || second == nil || first.Error() != second.Error() {
		t.Fatalf("Validate() twice: %v then %v", first, second)
	}
}
