package updates_test

import (
	"testing"

	"github.com/onceflow/onceflow/examples/updates"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

func TestReplaysAndStaleUpdatesAreNotCounted(t *testing.T) {
	d, err := topologytest.New(updates.Topology(), topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "updates", serde.String(), serde.JSON[updates.Update]())
	out := topologytest.Output(d, "update-counts", serde.String(), serde.Int64())
	send := func(customer, eventID, order string, version uint64) {
		t.Helper()
		err := in.PipeRecord(topologytest.Record[string, updates.Update]{
			Key:     customer,
			Value:   updates.Update{Order: order, Version: version},
			Headers: topology.Headers{{Key: "event-id", Value: []byte(eventID)}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	send("c1", "e1", "o1", 1)
	send("c1", "e1", "o1", 1) // a replay: rejected as a duplicate
	send("c1", "e2", "o1", 3)
	send("c1", "e3", "o1", 2) // older than version 3: rejected as stale

	counts, err := out.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 2 || counts[1].Key != "c1" || counts[1].Value != 2 {
		t.Fatalf("counts %+v, want c1 counted twice", counts)
	}
	var reasons []string
	for _, r := range d.Rejections() {
		reasons = append(reasons, r.Reason)
	}
	if len(reasons) != 2 || reasons[0] != "duplicate" || reasons[1] != "stale" {
		t.Fatalf("rejections %v, want [duplicate stale]", reasons)
	}
}
