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
	//       dedup dedup-1 (stores: dedup-1)
	//         latest-version latest-version-1 (stores: latest-version-1)
	//           process totals (stores: order-amounts, customer-totals)
	//             sink sink-1 -> topic customer-totals [string/int64]
}
