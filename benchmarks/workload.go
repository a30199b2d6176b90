package benchmarks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/topology"
)

// A Workload is one job the benchmark measures. Adding a workload is one
// type implementing this and one line in workloads.
type Workload interface {
	// Name is the workload's name on the command line and in results.
	Name() string
	// SizedValues reports whether the input's value size can be chosen
	// (and so is swept).
	SizedValues() bool
	// Input returns the input of one sweep point. It is deterministic: every
	// run of the point writes the same records to its own fresh topic.
	Input(records, valueSize int) (Input, error)
	// Topology is onceflow's topology from input to output.
	Topology(input, output string) *topology.Topology
	// Peers are the other systems that run the same workload.
	Peers() []Variant
	// WarmupRecord is a record a latency run writes to partition before
	// its input (the harness adds the warm-up header): it must take the
	// topology's whole path, every store and every output topic, so the
	// measured records meet no first-use costs (metadata, the first
	// AddPartitionsToTxn of each changelog partition).
	WarmupRecord(partition int) *kgo.Record
	// Check compares what one run left on the output topic with what the
	// input should give: exactly that with exactly-once, at least that
	// without.
	Check(in Input, out Output, exactlyOnce bool) error
}

// Input is a deterministic sequence of input records.
type Input interface {
	// Len is the number of records.
	Len() int
	// Record returns a new copy of record i (0 ≤ i < Len), without topic,
	// partition or timestamp: the writer sets those.
	Record(i int) *kgo.Record
}

// Output is what a run left on its output topic, read back read_committed.
type Output struct {
	Records int64
}

// workloads are the known workloads by name.
var workloads = map[string]Workload{
	"copy":      copyWorkload{},
	"orders":    ordersWorkload{},
	"pageviews": pageviewsWorkload{},
}

func workloadNames() string {
	names := make([]string, 0, len(workloads))
	for n := range workloads {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// WorkloadNames lists the known workloads.
func WorkloadNames() []string { return strings.Split(workloadNames(), ", ") }

// checkCount is the check of workloads with a known output count.
func checkCount(want, got int64, exactlyOnce bool) error {
	switch {
	case exactlyOnce && got != want:
		return fmt.Errorf("output holds %d records, want exactly %d", got, want)
	case !exactlyOnce && got < want:
		return fmt.Errorf("output holds %d records, want at least %d", got, want)
	}
	return nil
}

// copyWorkload: the copy topology, every record to the output unchanged.
type copyWorkload struct{}

func (copyWorkload) Name() string      { return "copy" }
func (copyWorkload) SizedValues() bool { return true }

func (copyWorkload) Input(records, valueSize int) (Input, error) {
	return copyInput{n: records, size: valueSize}, nil
}

func (copyWorkload) Topology(input, output string) *topology.Topology {
	return copyex.Topology(input, output)
}

func (copyWorkload) Peers() []Variant {
	return []Variant{saramaVariant{}, franzVariant{}, kstreamsVariant{exactlyOnce: true}, kstreamsVariant{}}
}

func (copyWorkload) WarmupRecord(int) *kgo.Record {
	return &kgo.Record{Key: []byte("warmup"), Value: []byte("warmup")}
}

func (copyWorkload) Check(in Input, out Output, exactlyOnce bool) error {
	return checkCount(int64(in.Len()), out.Records, exactlyOnce)
}

// copyKeys is the number of distinct keys of the copy input.
const copyKeys = 1000

// copyInput is record i = key "key-<i mod 1000>", a value of exactly size
// bytes (at least its sequence number) and an event-id header.
type copyInput struct{ n, size int }

func (c copyInput) Len() int { return c.n }

func (c copyInput) Record(i int) *kgo.Record {
	key := strconv.AppendInt([]byte("key-"), int64(i%copyKeys), 10)
	v := make([]byte, 0, max(c.size, 24))
	v = append(v, "seq-"...)
	v = strconv.AppendInt(v, int64(i), 10)
	v = append(v, ' ')
	for len(v) < c.size {
		v = append(v, 'x')
	}
	return &kgo.Record{
		Key:     key,
		Value:   v,
		Headers: []kgo.RecordHeader{{Key: gen.HeaderEventID, Value: strconv.AppendInt([]byte("copy-"), int64(i), 10)}},
	}
}

// ordersWorkload: dedup by event id, version gate per order, per-customer
// totals in Pebble state; input from the orders generator's plan (with its
// default duplicates, conflicts and late versions), so part of the input is
// rejected by design.
type ordersWorkload struct{}

func (ordersWorkload) Name() string      { return "orders" }
func (ordersWorkload) SizedValues() bool { return false }

func (ordersWorkload) Input(records, _ int) (Input, error) {
	plan, err := gen.PlanOrders(gen.OrdersConfig{
		Events:         records,
		Customers:      gen.DefaultCustomers,
		DuplicateRate:  gen.DefaultDuplicateRate,
		ConflictRate:   gen.DefaultConflictRate,
		OutOfOrderRate: gen.DefaultOutOfOrderRate,
		Seed:           1,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: orders input: %w", err)
	}
	sim := gen.NewOrdersSimulator()
	for i := range plan.Len() {
		r := plan.Record(i)
		sim.Apply(r.Key, r.EventID, r.Value)
	}
	return ordersInput{plan: plan, truth: sim.Truth()}, nil
}

func (ordersWorkload) Topology(input, output string) *topology.Topology {
	return orders.Topology(input, output)
}

// WarmupRecord is a valid event of its own order and customer, so it is
// deduplicated, versioned and totalled like any other.
func (ordersWorkload) WarmupRecord(partition int) *kgo.Record {
	id := "warmup-" + strconv.Itoa(partition)
	v := fmt.Appendf(nil, `{"event_id":%q,"order_id":%q,"customer":%q,"amount":0,"version":1}`, id, id, id)
	return &kgo.Record{Key: []byte(id), Value: v, Headers: []kgo.RecordHeader{
		{Key: gen.HeaderEventID, Value: []byte(id)},
		{Key: gen.HeaderVersion, Value: []byte("1")},
	}}
}

func (ordersWorkload) Peers() []Variant {
	return []Variant{kstreamsVariant{exactlyOnce: true}, kstreamsVariant{}}
}

// Check: one output record per accepted event.
func (ordersWorkload) Check(in Input, out Output, exactlyOnce bool) error {
	oi, ok := in.(ordersInput)
	if !ok {
		return fmt.Errorf("bench: orders check got a %T input", in)
	}
	return checkCount(int64(oi.truth.Accepted), out.Records, exactlyOnce)
}

type ordersInput struct {
	plan  *gen.OrdersPlan
	truth gen.Truth
}

func (o ordersInput) Len() int { return o.plan.Len() }

func (o ordersInput) Record(i int) *kgo.Record {
	r := o.plan.Record(i)
	return &kgo.Record{
		Key:   []byte(r.Key),
		Value: r.Value,
		Headers: []kgo.RecordHeader{
			{Key: gen.HeaderEventID, Value: []byte(r.EventID)},
			{Key: gen.HeaderVersion, Value: strconv.AppendUint(nil, r.Version, 10)},
		},
	}
}
