package gen

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/examples/allstages"
	"github.com/onceflow/onceflow/internal/wire"
)

// AllStagesConfig configures the input of the allstages topology.
type AllStagesConfig struct {
	// Events is the number of planned records (duplicates, conflicts, late
	// and out-of-order events included), closing records not included.
	Events int
	// Partitions is the partition count of both source topics (and so of
	// the repartition and through topics). Default 6.
	Partitions int
	// Seed makes the plan: one seed, one plan.
	Seed int64
	// Start is the event time of the first record. Default: the zero
	// value is refused; pick one (the chaos run takes half an hour before
	// its start, so that every timestamp stays below the wall clock plus
	// the allowed skew).
	Start time.Time
	// Rate is how many records the event time of a second holds (the
	// records are Rate per second apart). Default 1000.
	Rate float64
	// Accounts and Items bound the keys. Defaults 200 and 40.
	Accounts, Items int
	// The shares of injected records (defaults: 5 % duplicates, 1 %
	// conflicts, 3 % out-of-order versions, 0.5 % late events).
	DuplicateRate, ConflictRate, OutOfOrderRate, LateRate float64
}

func (c AllStagesConfig) withDefaults() AllStagesConfig {
	if c.Partitions == 0 {
		c.Partitions = 6
	}
	if c.Rate == 0 {
		c.Rate = 1000
	}
	if c.Accounts == 0 {
		c.Accounts = 200
	}
	if c.Items == 0 {
		c.Items = 40
	}
	if c.DuplicateRate == 0 && c.ConflictRate == 0 && c.OutOfOrderRate == 0 && c.LateRate == 0 {
		c.DuplicateRate, c.ConflictRate, c.OutOfOrderRate, c.LateRate = 0.05, 0.01, 0.03, 0.005
	}
	return c
}

// Validate reports every problem of the configuration at once.
func (c AllStagesConfig) Validate() error {
	var errs []error
	if c.Events < 1 {
		errs = append(errs, errors.New("gen: allstages needs at least one event"))
	}
	if c.Start.IsZero() {
		errs = append(errs, errors.New("gen: allstages needs a start time"))
	}
	if c.Partitions < 0 || c.Rate < 0 || c.Accounts < 0 || c.Items < 0 {
		errs = append(errs, errors.New("gen: allstages partitions, rate, accounts and items cannot be negative"))
	}
	for _, r := range []float64{c.DuplicateRate, c.ConflictRate, c.OutOfOrderRate, c.LateRate} {
		if r < 0 || r > 0.5 {
			errs = append(errs, fmt.Errorf("gen: allstages rate %v is not within [0, 0.5]", r))
		}
	}
	return errors.Join(errs...)
}

// AllStagesRecord is one planned input record of the allstages topology.
type AllStagesRecord struct {
	// App says which source topic: false the web topic, true the app topic.
	App     bool
	Key     string // the account
	EventID string // the header event-id
	Value   []byte // the Event as JSON
	At      time.Time
}

// AllStagesPlan is a planned input: Records during the run, then Closers,
// written once every record is processed, whose event time closes every
// window of the records (one per partition of the item topics).
type AllStagesPlan struct {
	Records []AllStagesRecord
	Closers []AllStagesRecord
	// What was injected.
	Duplicates, Conflicts, OutOfOrder, Late int
}

type plannedOrder struct {
	id      string
	account string
	app     bool
	version uint64
}

// PlanAllStages plans the input. Every record of an order (its versions,
// their duplicates and conflicts) is on one topic and, keyed by account,
// on one partition, so the gates decide each record the same whatever
// order a task reads its two topics in. A late event (event time an hour
// before Start) repeats the account and items of an earlier event of the
// same topic, so on every topic after the fan-out a record of its item
// with a later time precedes it: every window it could join has closed.
func PlanAllStages(cfg AllStagesConfig) (*AllStagesPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rnd := newRNG(cfg.Seed ^ 0x616c6c)
	p := &AllStagesPlan{}
	var orders []*plannedOrder
	var accepted []allstages.Event // accepted events, for duplicates and late ones
	var acceptedApp []bool
	step := float64(time.Second) / cfg.Rate
	seq := 0
	at := func(i int) int64 { return cfg.Start.Add(time.Duration(float64(i) * step)).UnixMilli() }
	add := func(app bool, e allstages.Event) {
		b, _ := json.Marshal(e)
		p.Records = append(p.Records, AllStagesRecord{App: app, Key: e.Account, EventID: e.ID, Value: b, At: time.UnixMilli(e.At)})
	}
	newEvent := func(o *plannedOrder, i int) allstages.Event {
		seq++
		o.version++
		items := make([]string, 1+rnd.intn(3))
		for j := range items {
			items[j] = fmt.Sprintf("item-%03d", rnd.intn(cfg.Items))
		}
		// Out of order within a second or two: well within every grace.
		ts := at(i) - int64(rnd.intn(1500))
		return allstages.Event{ID: fmt.Sprintf("e-%07d", seq), Account: o.account, Order: o.id, Version: o.version,
			Amount: int64(1 + rnd.intn(1000)), Items: items, At: max(ts, cfg.Start.UnixMilli())}
	}
	for i := 0; len(p.Records) < cfg.Events; i++ {
		u := rnd.float64()
		switch {
		case u < cfg.DuplicateRate && len(accepted) > 0:
			k := len(accepted) - 1 - rnd.intn(min(len(accepted), 50))
			b, _ := json.Marshal(accepted[k])
			p.Records = append(p.Records, AllStagesRecord{App: acceptedApp[k], Key: accepted[k].Account, EventID: accepted[k].ID, Value: b, At: time.UnixMilli(accepted[k].At)})
			p.Duplicates++
		case u < cfg.DuplicateRate+cfg.ConflictRate && len(accepted) > 0:
			k := len(accepted) - 1 - rnd.intn(min(len(accepted), 50))
			e := accepted[k]
			e.Amount += 1 + int64(rnd.intn(10))
			add(acceptedApp[k], e)
			p.Conflicts++
		case u < cfg.DuplicateRate+cfg.ConflictRate+cfg.OutOfOrderRate && len(orders) > 0 && len(p.Records)+2 <= cfg.Events:
			// Two versions of an order, the newer first: the older is stale.
			o := orders[rnd.intn(len(orders))]
			older := newEvent(o, i)
			newer := newEvent(o, i)
			add(o.app, newer)
			add(o.app, older)
			accepted, acceptedApp = append(accepted, newer), append(acceptedApp, o.app)
			p.OutOfOrder++
		case u < cfg.DuplicateRate+cfg.ConflictRate+cfg.OutOfOrderRate+cfg.LateRate && len(accepted) > 0:
			k := len(accepted) - 1 - rnd.intn(min(len(accepted), 50))
			o := &plannedOrder{id: fmt.Sprintf("o-late-%d", seq), account: accepted[k].Account, app: acceptedApp[k]}
			e := newEvent(o, i)
			e.Items, e.At = accepted[k].Items, cfg.Start.Add(-time.Hour).UnixMilli()-int64(rnd.intn(60000))
			add(o.app, e)
			p.Late++
		default:
			var o *plannedOrder
			if len(orders) == 0 || rnd.float64() < 0.3 {
				o = &plannedOrder{id: fmt.Sprintf("o-%06d", len(orders)), account: fmt.Sprintf("acct-%04d", rnd.intn(cfg.Accounts)), app: rnd.intn(2) == 1}
				orders = append(orders, o)
			} else {
				o = orders[rnd.intn(len(orders))]
			}
			e := newEvent(o, i)
			add(o.app, e)
			accepted, acceptedApp = append(accepted, e), append(acceptedApp, o.app)
		}
	}
	// Closers: one item per partition of the item topics, stamped past
	// every window's end plus grace.
	last := cfg.Start.UnixMilli()
	for _, r := range p.Records {
		last = max(last, r.At.UnixMilli())
	}
	closeAt := last + (allstages.HoppingSize + allstages.Grace + allstages.SessionGap + time.Minute).Milliseconds()
	n := int32(cfg.Partitions)
	for q := range n {
		item := ""
		for j := 0; ; j++ {
			item = fmt.Sprintf("close-%d-%d", q, j)
			if wire.Partition([]byte(item), 0, n) == q {
				break
			}
		}
		seq++
		e := allstages.Event{ID: fmt.Sprintf("close-%d-%d", cfg.Seed, q), Account: "closer", Order: "closer-" + item, Version: 1,
			Amount: 1, Items: []string{item}, At: closeAt}
		b, _ := json.Marshal(e)
		p.Closers = append(p.Closers, AllStagesRecord{Key: e.Account, EventID: e.ID, Value: b, At: time.UnixMilli(closeAt)})
	}
	return p, nil
}
