package statestore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/gen"
)

// benchEvent is one orders event as the state work of the orders topology
// sees it: the keys it reads and writes, as spans of a shared byte slice
// (so the millions of events held hold no pointer for the GC to scan), and
// the version it carries.
type benchEvent struct {
	eventID, orderID, customer span
	version                    uint64
	amount                     int64
	task                       Task
}

type span struct{ off, n uint32 }

// benchOrders holds the first n events of the orders benchmark's input
// (the generator's plan with its default rates: duplicates, conflicts and
// late versions included), each placed on one of six tasks by customer.
type benchOrders struct {
	bytes  []byte
	events []benchEvent
}

func (o *benchOrders) key(s span) []byte { return o.bytes[s.off : s.off+s.n : s.off+s.n] }

func (o *benchOrders) add(k []byte) span {
	s := span{uint32(len(o.bytes)), uint32(len(k))}
	o.bytes = append(o.bytes, k...)
	return s
}

func planBenchOrders(b testing.TB, n int) *benchOrders {
	plan, err := gen.PlanOrders(gen.OrdersConfig{
		Events:         n,
		DuplicateRate:  gen.DefaultDuplicateRate,
		ConflictRate:   gen.DefaultConflictRate,
		OutOfOrderRate: gen.DefaultOutOfOrderRate,
	})
	if err != nil {
		b.Fatal(err)
	}
	o := &benchOrders{bytes: make([]byte, 0, n*32), events: make([]benchEvent, plan.Len())}
	for i := range o.events {
		r := plan.Record(i)
		var c int
		if _, err := fmt.Sscanf(r.Key, "c-%d", &c); err != nil {
			b.Fatal(err)
		}
		orderID := r.Value[len(`{"event_id":"`)+len(r.EventID)+len(`","order_id":"`):]
		orderID = orderID[:bytes.IndexByte(orderID, '"')]
		o.events[i] = benchEvent{
			eventID:  o.add([]byte(r.EventID)),
			orderID:  o.add(orderID),
			customer: o.add([]byte(r.Key)),
			version:  r.Version,
			amount:   int64(i % 1000),
			task:     Task{SubTopology: 0, Partition: int32(c % 6)},
		}
	}
	return o
}

// orderStores are the stores of the orders topology, in the order an event
// visits them.
var orderStores = []string{"event-ids", "order-versions", "order-amounts", "customer-totals"}

// ordersRunner applies orders events to a DB as the orders topology and the
// runtime do: per event, through a Scope, a dedup lookup (and entry, for an
// id not seen), a version gate (read, and write unless stale), a read and a
// write of the order's amount and of its customer's total; per 5,000
// events (a 100 ms transaction at the benchmark's rates), an Apply.
type ordersRunner struct {
	db      *DB
	tx      *Txn
	scope   Scope
	n       int
	off     int64
	offsets map[StoreTask]int64
	now     time.Time
}

const ordersPerTxn = 5000

func (r *ordersRunner) event(o *benchOrders, e *benchEvent) error {
	if r.tx == nil {
		r.tx = r.db.Begin()
	}
	r.scope.Reset(r.tx, e.task)
	if err := r.process(o, e); err != nil {
		return err
	}
	if err := r.scope.Commit(); err != nil {
		return err
	}
	if r.n++; r.n%ordersPerTxn == 0 {
		return r.apply()
	}
	return nil
}

func (r *ordersRunner) process(o *benchOrders, e *benchEvent) error {
	s := &r.scope
	eventID, orderID, customer := o.key(e.eventID), o.key(e.orderID), o.key(e.customer)
	if _, seen, err := s.GetDedup("event-ids", eventID); err != nil || seen {
		return err
	}
	if err := s.PutDedup("event-ids", eventID, DedupEntry{FirstSeen: r.now, Source: "orders/0/1", PayloadHash: [32]byte{1}}); err != nil {
		return err
	}
	v, ok, err := s.Get("order-versions", orderID)
	if err != nil {
		return err
	}
	if ok && binary.BigEndian.Uint64(v) >= e.version {
		s.Drop() // stale: the gate rolls the dedup entry back
		return nil
	}
	if err := s.Put("order-versions", orderID, binary.BigEndian.AppendUint64(nil, e.version)); err != nil {
		return err
	}
	prev, err := r.getInt(s, "order-amounts", orderID)
	if err != nil {
		return err
	}
	if err := s.Put("order-amounts", orderID, binary.BigEndian.AppendUint64(nil, uint64(e.amount))); err != nil {
		return err
	}
	total, err := r.getInt(s, "customer-totals", customer)
	if err != nil {
		return err
	}
	return s.Put("customer-totals", customer, binary.BigEndian.AppendUint64(nil, uint64(total+e.amount-prev)))
}

func (r *ordersRunner) getInt(s *Scope, store string, key []byte) (int64, error) {
	v, ok, err := s.Get(store, key)
	if err != nil || !ok {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func (r *ordersRunner) apply() error {
	r.off++
	for _, s := range orderStores {
		for p := range int32(6) {
			r.offsets[StoreTask{s, Task{SubTopology: 0, Partition: p}}] = r.off
		}
	}
	err := r.tx.Apply(r.offsets)
	r.tx = nil
	return err
}

// BenchmarkOrdersState runs the orders topology's state work (see
// ordersRunner) for the generator's orders events against a DB on disk
// that already holds the state of the events before them: state=300k has
// processed 300,000 events first, state=3M 3,000,000, untimed. ns/op is
// the state's share of one event's CPU at that state size; the two
// sub-benchmarks give its growth. cpu-ns/op is the process's CPU per
// timed event, background flushes and compactions included: on a shared
// machine, steadier than ns/op. load-cpu-ns/event is the same over the
// untimed events that built the state: an average over its growth. At
// most 300,000 events are timed (-benchtime up to 300000x).
func BenchmarkOrdersState(b *testing.B) {
	for _, c := range []struct {
		name    string
		preload int
	}{
		{"state=300k", 300_000},
		{"state=3M", 3_000_000},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkOrdersState(b, c.preload, Options{}) })
	}
}

func benchmarkOrdersState(b *testing.B, preload int, opts Options) {
	const window = 300_000
	o := planBenchOrders(b, preload+window)
	opts.NoSync = true
	opts.DedupStores = []string{"event-ids"}
	r := &ordersRunner{
		db:      openT(b, b.TempDir(), opts),
		offsets: map[StoreTask]int64{},
		now:     time.UnixMilli(1_700_000_000_000),
	}
	load0 := processCPU(b)
	for i := range o.events[:preload] {
		if err := r.event(o, &o.events[i]); err != nil {
			b.Fatal(err)
		}
	}
	loadCPU := processCPU(b) - load0
	b.ReportAllocs()
	i := preload
	cpu0 := processCPU(b)
	for b.Loop() {
		if i == len(o.events) {
			b.Fatalf("more than %d timed events", window)
		}
		if err := r.event(o, &o.events[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(i-preload), "cpu-ns/op")
	b.ReportMetric(float64(loadCPU)/float64(preload), "load-cpu-ns/event")
	if r.tx != nil {
		r.tx.Discard()
	}
}

// processCPU is the process's user and system CPU time so far, in ns: on
// a shared machine the CPU an event costs (Pebble's background flushes and
// compactions included) is steadier than the wall time.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
