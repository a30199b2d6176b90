package gen

import (
	"cmp"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// OrderEvent is the JSON value of an orders input record. The generator
// writes its fields in this order: {"event_id":"...","order_id":"...",
// "customer":"c-0042","amount":1234,"version":3}.
type OrderEvent struct {
	EventID  string `json:"event_id"`
	OrderID  string `json:"order_id"`
	Customer string `json:"customer"`
	// Amount is the order's amount in cents.
	Amount int64 `json:"amount"`
	// Version is the order's version, from 1.
	Version uint64 `json:"version"`
}

// OrderRecord is one orders input record as written: key = customer, the
// JSON value, and the headers HeaderEventID = EventID and HeaderVersion =
// Version in decimal.
type OrderRecord struct {
	Key     string
	Value   []byte
	EventID string
	Version uint64
}

func (r OrderRecord) kgoRecord() *kgo.Record {
	return &kgo.Record{
		Key:   []byte(r.Key),
		Value: r.Value,
		Headers: []kgo.RecordHeader{
			{Key: HeaderEventID, Value: []byte(r.EventID)},
			{Key: HeaderVersion, Value: strconv.AppendUint(nil, r.Version, 10)},
		},
	}
}

// Shape of the plan.
const (
	// newOrderChance is the chance that a fresh event opens a new order of
	// its customer rather than updating one (about four versions an order).
	newOrderChance = 0.25
	// resendWindow bounds how many fresh events later a duplicate or a
	// conflict follows the event it re-sends.
	resendWindow = 2000
	minAmount    = 100     // cents
	amountRange  = 100_000 // amounts are minAmount to minAmount+amountRange-1
)

// OrdersPlan is the deterministic record sequence of one OrdersConfig: the
// order in which ProduceOrders writes them. Its counts are the intended
// injections; the truth comes from simulating the records themselves.
type OrdersPlan struct {
	// Duplicates, Conflicts and OutOfOrder are the injected re-sends,
	// conflicting re-uses and late versions.
	Duplicates, Conflicts, OutOfOrder int

	seed   int64
	events []plannedEvent
}

// plannedEvent is one planned record in compact form; Record encodes it.
type plannedEvent struct {
	customer int32
	order    int32
	event    int32 // the event id's number
	version  uint32
	amount   int64
}

// Len is the number of records.
func (p *OrdersPlan) Len() int { return len(p.events) }

// Record encodes record i (0 ≤ i < Len). The same plan gives the same
// bytes on every call.
func (p *OrdersPlan) Record(i int) OrderRecord {
	e := p.events[i]
	customer := CustomerID(int(e.customer))
	eventID := strconv.AppendInt([]byte("ev-"), p.seed, 10)
	eventID = append(eventID, '-')
	eventID = appendPadded(eventID, int64(e.event), 7)
	orderID := strconv.AppendInt([]byte("ord-"), p.seed, 10)
	orderID = append(orderID, '-')
	orderID = appendPadded(orderID, int64(e.order), 6)

	v := make([]byte, 0, 128)
	v = append(v, `{"event_id":"`...)
	v = append(v, eventID...)
	v = append(v, `","order_id":"`...)
	v = append(v, orderID...)
	v = append(v, `","customer":"`...)
	v = append(v, customer...)
	v = append(v, `","amount":`...)
	v = strconv.AppendInt(v, e.amount, 10)
	v = append(v, `,"version":`...)
	v = strconv.AppendUint(v, uint64(e.version), 10)
	v = append(v, '}')
	return OrderRecord{Key: customer, Value: v, EventID: string(eventID), Version: uint64(e.version)}
}

// CustomerID is the key of customer n: "c-0042".
func CustomerID(n int) string {
	return string(appendPadded([]byte("c-"), int64(n), 4))
}

func appendPadded(b []byte, n int64, width int) []byte {
	s := strconv.FormatInt(n, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// PlanOrders plans cfg's records; only Events, Customers, the rates and
// Seed matter. Fresh events pick a customer at random and open a new order
// (version 1) or update one of the customer's orders (the next version)
// with a random amount. Then:
//
//   - out-of-order: OutOfOrderRate×Events pairs of successive versions n,
//     n+1 of one order (no version in two pairs) swap places, so n+1 comes
//     first and n arrives late;
//   - duplicates: DuplicateRate×Events copies of random earlier records
//     (value and headers unchanged) follow them within a window;
//   - conflicts: ConflictRate×Events records re-use a random earlier
//     event id with a different amount (distinct for every conflict), in
//     the same window.
//
// Duplicates and conflicts re-send fresh events that are accepted only,
// never one another and never a late version: a late version is rejected
// as stale, and a gate's rejection rolls back what the gates before it
// wrote, so the dedup gate does not remember its event id and a re-send of
// it would be stale again, not a duplicate.
func PlanOrders(cfg OrdersConfig) (*OrdersPlan, error) {
	if err := errors.Join(cfg.planErrors()...); err != nil {
		return nil, err
	}
	if cfg.Customers == 0 {
		cfg.Customers = DefaultCustomers
	}
	n := cfg.Events
	dups := int(math.Round(float64(n) * cfg.DuplicateRate))
	conflicts := int(math.Round(float64(n) * cfg.ConflictRate))
	// Rounding with tiny Events can leave no fresh event: keep one.
	for dups+conflicts > n-1 {
		if dups >= conflicts {
			dups--
		} else {
			conflicts--
		}
	}
	fresh := n - dups - conflicts
	rng := newRNG(cfg.Seed)

	// Fresh events, in order of versions.
	events := make([]plannedEvent, 0, n)
	var (
		custOrders  = make([][]int32, cfg.Customers)
		nextVersion []uint32
		positions   [][]int32 // per order, the positions of its versions
	)
	for i := range fresh {
		c := rng.intn(cfg.Customers)
		var o int32
		if len(custOrders[c]) == 0 || rng.float64() < newOrderChance {
			o = int32(len(nextVersion))
			nextVersion = append(nextVersion, 0)
			positions = append(positions, nil)
			custOrders[c] = append(custOrders[c], o)
		} else {
			o = custOrders[c][rng.intn(len(custOrders[c]))]
		}
		nextVersion[o]++
		positions[o] = append(positions[o], int32(i))
		events = append(events, plannedEvent{
			customer: int32(c),
			order:    o,
			event:    int32(i),
			version:  nextVersion[o],
			amount:   minAmount + int64(rng.intn(amountRange)),
		})
	}

	// Out of order: swap disjoint pairs of successive versions.
	wantLate := int(math.Round(float64(n) * cfg.OutOfOrderRate))
	late := 0
	var used, stale []bool
	if wantLate > 0 {
		var pairs [][2]int32
		for _, pos := range positions {
			for j := 0; j+1 < len(pos); j++ {
				pairs = append(pairs, [2]int32{pos[j], pos[j+1]})
			}
		}
		rng.shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		used = make([]bool, fresh)
		for _, pr := range pairs {
			if late == wantLate {
				break
			}
			a, b := pr[0], pr[1]
			if used[a] || used[b] {
				continue
			}
			used[a], used[b] = true, true
			events[a], events[b] = events[b], events[a]
			if stale == nil {
				stale = make([]bool, fresh)
			}
			stale[b] = true
			late++
		}
	}

	// Re-sends: each follows its source within resendWindow fresh events.
	type resend struct {
		after int // goes right after fresh event number after
		ev    plannedEvent
	}
	resends := make([]resend, 0, dups+conflicts)
	for k := range dups + conflicts {
		src := rng.intn(fresh)
		for stale != nil && stale[src] {
			src = rng.intn(fresh)
		}
		ev := events[src]
		if k >= dups {
			ev.amount += int64(k-dups) + 1 // differs from the source and every other conflict
		}
		resends = append(resends, resend{after: src + rng.intn(min(fresh-src, resendWindow)), ev: ev})
	}
	slices.SortStableFunc(resends, func(a, b resend) int { return cmp.Compare(a.after, b.after) })

	out := make([]plannedEvent, 0, n)
	r := 0
	for i, ev := range events {
		out = append(out, ev)
		for ; r < len(resends) && resends[r].after == i; r++ {
			out = append(out, resends[r].ev)
		}
	}
	return &OrdersPlan{Duplicates: dups, Conflicts: conflicts, OutOfOrder: late, seed: cfg.Seed, events: out}, nil
}

// rng is SplitMix64: a small generator whose sequence is fixed by this
// code, so a seed plans the same records on every platform and Go version.
type rng struct{ s uint64 }

func newRNG(seed int64) *rng { return &rng{s: uint64(seed)} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// intn returns a number in [0, n), n > 0 (multiply-shift; the bias is
// below n/2^64).
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// float64 returns a number in [0, 1).
func (r *rng) float64() float64 { return float64(r.next()>>11) / (1 << 53) }

// shuffle is Fisher-Yates.
func (r *rng) shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.intn(i+1))
	}
}
