package sinks_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceflow/onceflow/sinks"
)

// A downstream shared by every runner keeps the highest fence per outbox
// partition: the late write of a runner that lost the partition is
// refused once the new owner has written.
func ExampleFenceGuard() {
	var guard sinks.FenceGuard
	balance := map[string]int{}
	credit := sinks.Func(func(_ context.Context, d sinks.Delivery) error {
		return guard.Apply(d, func() error {
			balance[string(d.Payload)]++
			return nil
		})
	})
	ctx := context.Background()
	newOwner := sinks.Delivery{Sink: "credit", IdempotencyKey: "credit:orders/0/8", Payload: []byte("alice"),
		Fence: sinks.Fence{Generation: 412, Partition: 0}}
	zombie := sinks.Delivery{Sink: "credit", IdempotencyKey: "credit:orders/0/7", Payload: []byte("alice"),
		Fence: sinks.Fence{Generation: 97, Partition: 0}}
	fmt.Println(credit.Deliver(ctx, newOwner))
	err := credit.Deliver(ctx, zombie)
	fmt.Println(errors.Is(err, sinks.ErrFenced), balance["alice"])
	// Output:
	// <nil>
	// true 1
}
