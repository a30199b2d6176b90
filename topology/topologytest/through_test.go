package topologytest_test

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// A topology that writes a topic of its own and reads it back (Through)
// runs in the driver as it does on a broker: the count after the topic
// sees every word of every line, by the new key.
func TestThrough(t *testing.T) {
	tp := topology.New("words")
	lines := topology.Source(tp, "lines", serde.String(), serde.String())
	words := topology.FlatMap(lines, func(_ string, line string) ([]topology.KeyValue[string, string], error) {
		var kvs []topology.KeyValue[string, string]
		for _, w := range strings.Fields(line) {
			kvs = append(kvs, topology.KeyValue[string, string]{Key: w, Value: w})
		}
		return kvs, nil
	})
	byWord := topology.Through(words, "words-by-word", serde.String(), serde.String())
	topology.To(topology.Count(byWord, "counts", serde.String()), "word-counts", serde.String(), serde.Int64())

	d, err := topologytest.New(tp, topologytest.Config{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "lines", serde.String(), serde.String())
	for _, l := range []string{"to be or not to be", "be quick"} {
		if err := in.Pipe("", l); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := topologytest.Output(d, "word-counts", serde.String(), serde.Int64()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]int64{}
	for _, r := range counts {
		last[r.Key] = r.Value
	}
	want := map[string]int64{"to": 2, "be": 3, "or": 1, "not": 1, "quick": 1}
	if len(counts) != 8 || len(last) != len(want) {
		t.Fatalf("%d counts %v, want 8 updates ending in %v", len(counts), last, want)
	}
	for w, n := range want {
		if last[w] != n {
			t.Errorf("count of %q = %d, want %d", w, last[w], n)
		}
	}
}
