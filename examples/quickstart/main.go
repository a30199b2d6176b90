// Command quickstart is the README's quickstart: orders of 1,000 or more,
// keyed by customer, from "orders" to "big-orders", exactly once. Its main
// is the app kit's: `quickstart run --brokers 127.0.0.1:9092
// --instance-id r1` runs a replica until SIGINT or SIGTERM, `quickstart
// describe` prints the graph, `quickstart verify` checks the output.
package main

import (
	"strings"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

type Order struct {
	ID       string `json:"id"`
	Customer string `json:"customer"`
	Amount   int64  `json:"amount"`
}

// BigOrders keeps orders of 1,000 or more, keyed by customer.
func BigOrders() *topology.Topology {
	t := topology.New("big-orders")
	orders := topology.Source(t, "orders", serde.String(), serde.JSON[Order]())
	big := topology.Filter(orders, func(_ string, o Order) bool { return o.Amount >= 1000 })
	byCustomer := topology.Map(big, func(_ string, o Order) (string, Order, error) {
		return strings.ToLower(o.Customer), o, nil
	})
	topology.To(byCustomer, "big-orders", serde.String(), serde.JSON[Order]())
	return t
}

func main() { app.Main(BigOrders()) }
