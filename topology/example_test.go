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

func ExampleGrouped_WindowedBy() {
	type View struct {
		User string `json:"user"`
	}
	t := topology.New("pageviews")
	views := topology.Source(t, "views", serde.String(), serde.JSON[View]())
	byUser := topology.GroupBy(views, "by-user", func(_ string, v View) string { return v.User }, serde.String(), serde.JSON[View]())
	hourly := byUser.WindowedBy(topology.TumblingWindows(time.Hour).WithGrace(5 * time.Minute)).EmitFinal().Count("views-per-hour")
	topology.To(hourly, "hourly", topology.WindowedCodec(serde.String()), serde.Int64())

	fmt.Print(t.Describe())
	// Output:
	// topology pageviews
	//   sub-topology 0 (sources: views)
	//     source source-views <- topic views [string/json]
	//       select-key map-1
	//         sink sink-1 -> topic by-user-repartition [string/json] (repartition)
	//   sub-topology 1 (sources: by-user-repartition)
	//     source source-by-user-repartition <- topic by-user-repartition [string/json] (repartition)
	//       windowed-count [tumbling 1h0m0s, grace 5m0s, emit final] views-per-hour (stores: views-per-hour)
	//         sink sink-2 -> topic hourly [windowed(string)/int64]
}

func ExampleWindowedCodec() {
	c := topology.WindowedCodec(serde.String())
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	b, _ := c.Encode(topology.Windowed[string]{Key: "ann", Start: start, End: start.Add(time.Hour)})
	fmt.Printf("%q + % x + % x\n", b[:3], b[3:11], b[11:])
	w, _ := c.Decode(b)
	fmt.Println(w.Key, w.Start.UTC().Format(time.Kitchen), w.End.UTC().Format(time.Kitchen))
	// Output:
	// "ann" + 00 00 01 9b 78 ff f9 00 + 00 00 01 9b 79 36 e7 80
	// ann 10:00AM 11:00AM
}
