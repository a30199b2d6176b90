package gen

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"

	"github.com/onceflow/onceflow/internal/wire"
)

// Truth is what a correct orders topology outputs for the records of one
// ProduceOrders run, written next to the run with WriteFile:
//
//	{
//	  "topic": "orders", "partitions": 6, "seed": 1, "customers": 200,
//	  "events_total": 100000, "events_unique": 89000,
//	  "duplicates_injected": 10000, "conflicts_injected": 1000,
//	  "stale_injected": 5000, "accepted": 84000,
//	  "totals": {"c-0000": 1234567, ...}
//	}
//
// The counts satisfy events_total = events_unique + duplicates_injected +
// conflicts_injected + undecodable and events_unique = accepted +
// stale_injected.
type Truth struct {
	// Topic, Partitions, Seed and Customers describe the run.
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Seed       int64  `json:"seed"`
	Customers  int    `json:"customers"`
	// EventsTotal is the number of input records.
	EventsTotal int `json:"events_total"`
	// EventsUnique is the number of distinct event ids.
	EventsUnique int `json:"events_unique"`
	// DuplicatesInjected, ConflictsInjected and StaleInjected are the
	// records the gates reject with reason duplicate, conflict and stale.
	DuplicatesInjected int `json:"duplicates_injected"`
	ConflictsInjected  int `json:"conflicts_injected"`
	StaleInjected      int `json:"stale_injected"`
	// Undecodable counts records rejected as undecodable; the generator
	// writes none.
	Undecodable int `json:"undecodable,omitempty"`
	// Accepted is the number of records that pass every gate: one output
	// record each.
	Accepted int `json:"accepted"`
	// Totals is each customer's final total (cents), for every customer
	// with an accepted record and no other.
	Totals map[string]int64 `json:"totals"`
}

// Rejections returns the expected rejected-record counts by reason, with
// the zero counts of duplicate, conflict and stale included.
func (t Truth) Rejections() map[string]int {
	m := map[string]int{
		wire.ReasonDuplicate: t.DuplicatesInjected,
		wire.ReasonConflict:  t.ConflictsInjected,
		wire.ReasonStale:     t.StaleInjected,
	}
	if t.Undecodable > 0 {
		m[wire.ReasonUndecodable] = t.Undecodable
	}
	return m
}

// Check reports a truth whose counts contradict one another.
func (t Truth) Check() error {
	var errs []error
	for name, v := range map[string]int{
		"events_total": t.EventsTotal, "events_unique": t.EventsUnique, "accepted": t.Accepted,
		"duplicates_injected": t.DuplicatesInjected, "conflicts_injected": t.ConflictsInjected,
		"stale_injected": t.StaleInjected, "undecodable": t.Undecodable,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative (%d)", name, v))
		}
	}
	if sum := t.EventsUnique + t.DuplicatesInjected + t.ConflictsInjected + t.Undecodable; sum != t.EventsTotal {
		errs = append(errs, fmt.Errorf("events_total %d != events_unique + duplicates + conflicts + undecodable = %d", t.EventsTotal, sum))
	}
	if sum := t.Accepted + t.StaleInjected; sum != t.EventsUnique {
		errs = append(errs, fmt.Errorf("events_unique %d != accepted + stale = %d", t.EventsUnique, sum))
	}
	if t.Accepted > 0 && len(t.Totals) == 0 {
		errs = append(errs, fmt.Errorf("%d accepted events but no totals", t.Accepted))
	}
	if len(t.Totals) > t.Accepted {
		errs = append(errs, fmt.Errorf("%d customer totals from %d accepted events", len(t.Totals), t.Accepted))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gen: inconsistent truth: %w", err)
	}
	return nil
}

// WriteFile writes t to path as indented JSON.
func (t Truth) WriteFile(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("gen: truth: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("gen: write truth: %w", err)
	}
	return nil
}

// ReadTruth reads a truth file written by WriteFile and checks it.
func ReadTruth(path string) (Truth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Truth{}, fmt.Errorf("gen: read truth: %w", err)
	}
	var t Truth
	if err := json.Unmarshal(b, &t); err != nil {
		return Truth{}, fmt.Errorf("gen: truth file %s: %w", path, err)
	}
	if err := t.Check(); err != nil {
		return Truth{}, fmt.Errorf("%w (in %s)", err, path)
	}
	return t, nil
}

// OrderOutcome is what the orders topology does with one input record.
type OrderOutcome struct {
	// Reason is the rejection reason; "" means accepted.
	Reason string
	// Total is the customer's new total when accepted: the value of the
	// output record.
	Total int64
}

// OrdersSimulator runs the orders topology's gates over input records in
// the order one partition delivers them. Per record:
//
//  1. the value must decode as an OrderEvent, else it is rejected as
//     undecodable (and not remembered);
//  2. the dedup gate on the event id with the SHA-256 of the value: first
//     seen, it is remembered with that hash (even if a later gate rejects
//     the record); seen with the same hash, rejected as duplicate; with
//     another hash, rejected as conflict (the hash first seen stays);
//  3. the version gate per order id: accepted only above the order's last
//     accepted version (any version when there is none), else stale;
//  4. accepted: the order's amount becomes the record's, and the output is
//     the sum of the current amounts of the customer's (the key's) orders.
//
// State is scoped by key (customer), as one customer's records share a
// partition; the generator's event and order ids are unique across
// customers, so this is also the per-partition result.
type OrdersSimulator struct {
	seen    map[string][sha256.Size]byte // key \x00 event id → payload hash
	version map[string]uint64            // key \x00 order id → last accepted version
	amount  map[string]int64             // key \x00 order id → current amount
	totals  map[string]int64             // key → total
	t       Truth
}

// NewOrdersSimulator returns a simulator with empty state.
func NewOrdersSimulator() *OrdersSimulator {
	return &OrdersSimulator{
		seen:    make(map[string][sha256.Size]byte),
		version: make(map[string]uint64),
		amount:  make(map[string]int64),
		totals:  make(map[string]int64),
	}
}

// Apply runs one record (key, header event id, value) through the gates.
func (s *OrdersSimulator) Apply(key, eventID string, value []byte) OrderOutcome {
	s.t.EventsTotal++
	var ev OrderEvent
	if err := json.Unmarshal(value, &ev); err != nil {
		s.t.Undecodable++
		return OrderOutcome{Reason: wire.ReasonUndecodable}
	}
	sum := sha256.Sum256(value)
	idKey := key + "\x00" + eventID
	if first, ok := s.seen[idKey]; ok {
		if first == sum {
			s.t.DuplicatesInjected++
			return OrderOutcome{Reason: wire.ReasonDuplicate}
		}
		s.t.ConflictsInjected++
		return OrderOutcome{Reason: wire.ReasonConflict}
	}
	s.seen[idKey] = sum
	s.t.EventsUnique++

	orderKey := key + "\x00" + ev.OrderID
	if last, ok := s.version[orderKey]; ok && ev.Version <= last {
		s.t.StaleInjected++
		return OrderOutcome{Reason: wire.ReasonStale}
	}
	s.version[orderKey] = ev.Version
	s.totals[key] += ev.Amount - s.amount[orderKey]
	s.amount[orderKey] = ev.Amount
	s.t.Accepted++
	return OrderOutcome{Total: s.totals[key]}
}

// Truth returns the counts and totals so far (Topic, Partitions, Seed and
// Customers unset).
func (s *OrdersSimulator) Truth() Truth {
	t := s.t
	t.Totals = maps.Clone(s.totals)
	return t
}

// SimulateOrders runs recs, in order, through a new simulator.
func SimulateOrders(recs []OrderRecord) (Truth, []OrderOutcome) {
	s := NewOrdersSimulator()
	out := make([]OrderOutcome, len(recs))
	for i, r := range recs {
		out[i] = s.Apply(r.Key, r.EventID, r.Value)
	}
	return s.Truth(), out
}
