// Command quickstart is the README's quickstart: orders of 1,000 or more,
// keyed by customer, from "orders" to "big-orders", exactly once.
package main

import (
	"context"
	"os"
	"os/signal"
	"strings"

	"github.com/onceflow/onceflow/processor"
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

func main() {
	p, err := processor.New(processor.Config{
		Brokers:       []string{"127.0.0.1:9092"},
		ApplicationID: "big-orders",
		InstanceID:    os.Getenv("HOSTNAME"), // stable per replica, unique among live ones
	}, BigOrders())
	if err != nil {
		panic(err) // every configuration and topology problem, joined
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := p.Run(ctx); err != nil { // commits or aborts, leaves the group
		panic(err)
	}
}
