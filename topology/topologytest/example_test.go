package topologytest_test

import (
	"fmt"
	"strings"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

func Example() {
	tp := topology.New("words")
	lines := topology.Source(tp, "lines", serde.String(), serde.String())
	words := topology.FlatMap(lines, func(_ string, line string) ([]topology.KeyValue[string, string], error) {
		var kvs []topology.KeyValue[string, string]
		for _, w := range strings.Fields(line) {
			kvs = append(kvs, topology.KeyValue[string, string]{Key: w, Value: w})
		}
		return kvs, nil
	})
	byWord := topology.Repartition(words, "by-word", serde.String(), serde.String())
	topology.To(topology.Count(byWord, "counts", serde.String()), "word-counts", serde.String(), serde.Int64())

	d, err := topologytest.New(tp, topologytest.Config{Partitions: 2})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "lines", serde.String(), serde.String())
	in.Pipe("", "to be or not to be")
	counts, _ := topologytest.Output(d, "word-counts", serde.String(), serde.Int64()).ReadAll()
	for _, r := range counts {
		fmt.Println(r.Key, r.Value)
	}
	// Output:
	// to 1
	// be 1
	// or 1
	// not 1
	// to 2
	// be 2
}
