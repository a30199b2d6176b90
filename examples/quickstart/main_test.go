package main

import (
	"testing"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology/topologytest"
)

func TestBigOrders(t *testing.T) {
	d, err := topologytest.New(BigOrders(), topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "orders", serde.String(), serde.JSON[Order]())
	out := topologytest.Output(d, "big-orders", serde.String(), serde.JSON[Order]())

	in.Pipe("o-1", Order{ID: "o-1", Customer: "ACME", Amount: 1500})
	in.Pipe("o-2", Order{ID: "o-2", Customer: "acme", Amount: 20})

	got, err := out.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "acme" || got[0].Value.ID != "o-1" {
		t.Fatalf("big orders: %+v, want o-1 keyed acme", got)
	}
}
