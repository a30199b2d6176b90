package topology_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

func Example() {
	type Order struct {
		Customer string `json:"customer"`
		Amount   int64  `json:"amount"`
	}
	t := topology.New("orders")
	in := topology.Source(t, "orders", serde.String(), serde.JSON[Order]())

	big := topology.Filter(in, func(_ string, o Order) bool { return o.Amount > 100 })
	topology.To(big, "big-orders", serde.String(), serde.JSON[Order]())

	amounts := topology.Map(in, func(_ string, o Order) (string, int64, error) { return o.Customer, o.Amount, nil })
	topology.To(amounts, "amounts-by-customer", serde.String(), serde.Int64())

	fmt.Print(t.Describe())
	// Output:
	// topology orders
	//   sub-topology 0 (sources: orders)
	//     source source-orders <- topic orders [string/json]
	//       filter filter-1
	//         sink sink-1 -> topic big-orders [string/json]
	//       map map-1
	//         sink sink-2 -> topic amounts-by-customer [string/int64]
}

func ExampleTopology_Validate() {
	t := topology.New("mistakes")
	in := topology.Source(t, "words", serde.String(), serde.String())
	topology.Filter(in, func(_, w string) bool { return w != "" })
	upper := topology.MapValues(in, func(w string) (string, error) { return strings.ToUpper(w), nil })
	topology.To(upper, "words", serde.String(), nil)

	fmt.Println(t.Validate())
	// Output:
	// topology: to "words": value codec is nil
	// topology: filter "filter-1" leads nowhere: add an output with To
	// topology: topic "words" is both read and written: a loop
}

func ExampleProcess() {
	t := topology.New("split")
	in := topology.Source(t, "sentences", serde.String(), serde.String())
	words := topology.Process(in, "split-words", func(c topology.Context[string, string], r topology.Record[string, string]) error {
		for _, w := range strings.Fields(r.Value) {
			if err := c.Forward(topology.Record[string, string]{Key: w, Value: r.Key, Timestamp: r.Timestamp}); err != nil {
				return err
			}
		}
		return nil
	})
	topology.To(words, "words", serde.String(), serde.String())
	fmt.Println(t.Validate() == nil)
	// Output:
	// true
}

// DescribeMermaid draws the graph: paste the output into Markdown between
// ```mermaid fences.
func ExampleTopology_DescribeMermaid() {
	t := topology.New("gate")
	in := topology.Source(t, "payments", serde.String(), serde.String())
	fresh := topology.Dedup(in, "payment-ids", topology.EventIDHeader("event-id"), 24*time.Hour)
	topology.To(fresh, "payments-once", serde.String(), serde.String())
	fmt.Print(t.DescribeMermaid())
	// Output:
	// flowchart LR
	//   subgraph st0["sub-topology 0"]
	//     n0(["source source-payments"])
	//     n1["dedup payment-ids"]
	//     n2(["sink sink-1"])
	//   end
	//   t0[/"topic payments"/]
	//   t1[/"rejected records #lt;app#gt;-rejected"/]
	//   t2[/"topic payments-once"/]
	//   s0[("store payment-ids (dedup)")]
	//   t0 --> n0
	//   n0 --> n1
	//   n1 -.- s0
	//   n1 -. rejected .-> t1
	//   n1 --> n2
	//   n2 --> t2
}
