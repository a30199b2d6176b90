package topologytest

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// A rejection that reaches the top of the graph (a source that does not
// split records, which a hand-built graph may have) rejects the input
// record whole, and names the gate that rejected it, as a replica's
// rejected-records topic does (onceflow-reject-node).
func TestRejectionAtTheTopKeepsItsNode(t *testing.T) {
	tp := topology.New("node")
	in := topology.Source(tp, "in", serde.String(), serde.String())
	fresh := topology.Dedup(in, "event-ids", topology.EventIDHeader("event-id"), time.Hour)
	topology.To(fresh, "out", serde.String(), serde.String())
	d, err := New(tp, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.g.Source("in").Splits = false

	pipe := Input(d, "in", serde.String(), serde.String())
	for range 2 {
		if err := pipe.PipeRecord(Record[string, string]{Key: "k", Value: "v",
			Headers: topology.Headers{{Key: "event-id", Value: []byte("e1")}}}); err != nil {
			t.Fatal(err)
		}
	}
	rs := d.Rejections()
	if len(rs) != 1 || rs[0].Reason != "duplicate" || rs[0].Node != "event-ids" {
		t.Fatalf("rejections %+v, want one duplicate rejected by event-ids", rs)
	}
}
