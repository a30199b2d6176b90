package orders_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// The orders topology without a broker: per-customer totals follow each
// order's latest accepted amount; replays, reused event ids and late
// versions are rejected with their reasons and change no total.
func TestOrdersTotals(t *testing.T) {
	d, err := topologytest.New(orders.Topology("orders", "totals"), topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "orders", serde.String(), serde.JSON[orders.Event]())
	out := topologytest.Output(d, "totals", serde.String(), serde.Int64())
	for _, e := range []orders.Event{
		{EventID: "e1", OrderID: "o1", Customer: "c1", Amount: 100, Version: 1},
		{EventID: "e2", OrderID: "o2", Customer: "c1", Amount: 50, Version: 1},
		{EventID: "e1", OrderID: "o1", Customer: "c1", Amount: 100, Version: 1}, // replay
		{EventID: "e3", OrderID: "o1", Customer: "c1", Amount: 120, Version: 3},
		{EventID: "e4", OrderID: "o1", Customer: "c1", Amount: 999, Version: 2}, // late version
		{EventID: "e3", OrderID: "o1", Customer: "c1", Amount: 130, Version: 3}, // id reused, other payload
		{EventID: "e5", OrderID: "o3", Customer: "c2", Amount: 7, Version: 1},
	} {
		err := in.PipeRecord(topologytest.Record[string, orders.Event]{Key: e.Customer, Value: e,
			Headers: topology.Headers{{Key: "event-id", Value: []byte(e.EventID)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := out.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var totals []string
	for _, r := range got {
		totals = append(totals, r.Key+":"+strconv.FormatInt(r.Value, 10))
	}
	if want := []string{"c1:100", "c1:150", "c1:170", "c2:7"}; !slices.Equal(totals, want) {
		t.Errorf("totals %v, want %v", totals, want)
	}
	var reasons []string
	for _, r := range d.Rejections() {
		reasons = append(reasons, r.Reason)
	}
	if want := []string{"duplicate", "stale", "conflict"}; !slices.Equal(reasons, want) {
		t.Errorf("rejections %v, want %v", reasons, want)
	}
}

// An event the topology cannot place, without an order id or a customer
// (the JSON literal null among them), is rejected as undecodable instead of
// being counted under the empty order, where every such event would share
// one version and one total.
func TestOrdersEventsWithoutIDsAreUndecodable(t *testing.T) {
	d, err := topologytest.New(orders.Topology("orders", "totals"), topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "orders", serde.String(), serde.Bytes())
	out := topologytest.Output(d, "totals", serde.String(), serde.Int64())
	for i, v := range []string{
		`null`,
		`{}`,
		`{"order_id":"o1","amount":5,"version":1}`,
		`{"customer":"c1","amount":5,"version":1}`,
		`{"order_id":"o2","customer":"c1","amount":5}`, // no version: version 0, accepted
	} {
		h := topology.Headers{{Key: "event-id", Value: []byte("e" + strconv.Itoa(i))}}
		if err := in.PipeRaw([]byte("c1"), []byte(v), h, time.Time{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := out.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "c1" || got[0].Value != 5 {
		t.Errorf("outputs %+v, want one: c1 = 5", got)
	}
	var reasons []string
	for _, r := range d.Rejections() {
		reasons = append(reasons, r.Reason)
	}
	if want := slices.Repeat([]string{"undecodable"}, 4); !slices.Equal(reasons, want) {
		t.Errorf("rejections %v, want %v", reasons, want)
	}
}
