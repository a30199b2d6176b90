package topologytest_test

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// Reading a topic the topology never writes is an error that names the
// topics it does write, so a typo cannot pass a "no output" assertion; a
// topic it writes but has not written yet reads as empty.
func TestOutputOfATopicNeverWrittenIsAnError(t *testing.T) {
	tp := topology.New("copy")
	in := topology.Source(tp, "orders", serde.String(), serde.String())
	topology.To(topology.Filter(in, func(k, v string) bool { return v != "" }), "big-orders", serde.String(), serde.String())
	d, err := topologytest.New(tp, topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := topologytest.Input(d, "orders", serde.String(), serde.String()).Pipe("k", ""); err != nil {
		t.Fatal(err)
	}
	recs, err := topologytest.Output(d, "big-order", serde.String(), serde.String()).ReadAll()
	if err == nil || !strings.Contains(err.Error(), `topologytest: the topology never writes topic "big-order" (it writes big-orders)`) {
		t.Errorf("a typo'd output: %d records, err %v", len(recs), err)
	}
	recs, err = topologytest.Output(d, "big-orders", serde.String(), serde.String()).ReadAll()
	if err != nil || len(recs) != 0 {
		t.Errorf("a written topic with nothing yet: %d records, err %v", len(recs), err)
	}
}
