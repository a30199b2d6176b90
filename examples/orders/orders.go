// Package orders is the example stateful topology: order events go through
// a dedup gate (event id), a version gate (per order) and per-customer
// totals. `onceflow run orders` runs it; the demo measures it.
//
// Input: key = customer id, value = JSON Event (with an order_id and a
// customer; otherwise rejected as undecodable), header event-id. Output:
// key = customer id, value = the customer's new total (int64, 8 bytes
// big-endian) after every accepted event. The total is the sum over the
// customer's orders of each order's latest accepted amount.
//
// TopologyWithSinks adds external sinks: a webhook notified once per
// accepted order, and a PostgreSQL table with one row per accepted order.
package orders

import (
	"errors"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Event is one order event.
type Event struct {
	EventID  string `json:"event_id"`
	OrderID  string `json:"order_id"`
	Customer string `json:"customer"`
	Amount   int64  `json:"amount"`
	Version  uint64 `json:"version"`
}

// eventCodec is Event in JSON, refusing an event the topology cannot
// place: one without an order id (the version gate's entity: every such
// event would share one version) or without a customer (the key of the
// total it adds to). Such records, the JSON literal null among them, are
// rejected as undecodable. A missing version is version 0.
type eventCodec struct{ serde.Codec[Event] }

func (c eventCodec) Decode(b []byte) (Event, error) {
	e, err := c.Codec.Decode(b)
	switch {
	case err != nil:
		return e, err
	case e.OrderID == "":
		return e, errors.New("orders: event without an order_id")
	case e.Customer == "":
		return e, errors.New("orders: event without a customer")
	}
	return e, nil
}

// Retention is how long an event id is remembered, by event time.
const Retention = 7 * 24 * time.Hour

// Topology builds the orders topology from input to output.
func Topology(input, output string) *topology.Topology {
	t, _ := build(input, output)
	return t
}

// build builds the topology and returns it with the stream of accepted
// events (past the dedup and version gates).
func build(input, output string) (*topology.Topology, topology.Stream[string, Event]) {
	t := topology.New("orders")
	in := topology.Source(t, input, serde.String(), eventCodec{serde.JSON[Event]()})
	fresh := topology.Dedup(in, "event-ids", topology.EventIDHeader("event-id"), Retention)
	current := topology.LatestVersion(fresh, "order-versions", func(_ string, e Event) (string, uint64) { return e.OrderID, e.Version })
	amounts := topology.Store(t, "order-amounts", serde.String(), serde.Int64())
	totals := topology.Store(t, "customer-totals", serde.String(), serde.Int64())
	out := topology.Process(current, "totals", func(ctx topology.Context[string, int64], r topology.Record[string, Event]) error {
		e := r.Value
		prev, _, err := amounts.Get(ctx, e.OrderID)
		if err != nil {
			return err
		}
		if err := amounts.Put(ctx, e.OrderID, e.Amount); err != nil {
			return err
		}
		total, _, err := totals.Get(ctx, e.Customer)
		if err != nil {
			return err
		}
		total += e.Amount - prev
		if err := totals.Put(ctx, e.Customer, total); err != nil {
			return err
		}
		return ctx.Forward(topology.Record[string, int64]{Key: e.Customer, Value: total, Headers: r.Headers, Timestamp: r.Timestamp})
	}, amounts, totals)
	topology.To(out, output, serde.String(), serde.Int64())
	return t, current
}
