package orders_test

import (
	"fmt"

	"github.com/onceflow/onceflow/examples/orders"
)

func Example() {
	fmt.Print(orders.Topology("orders", "customer-totals").Describe())
	// Output:
	// topology orders
	//   sub-topology 0 (sources: orders)
	//     source source-orders <- topic orders [string/json]
	//       dedup event-ids (stores: event-ids)
	//         latest-version order-versions (stores: order-versions)
	//           process totals (stores: order-amounts, customer-totals)
	//             sink sink-1 -> topic customer-totals [string/int64]
}
