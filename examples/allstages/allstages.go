// Package allstages is the topology that uses every kind of stage the
// library has, for the chaos run (`onceflow chaos --topology allstages`)
// and `onceflow run allstages`: two merged source topics, the dedup and
// version gates, aggregates by key, a FlatMap fan-out grouped by a new key
// through a repartition topic, a Through topic, every window kind with
// grace and final results, a wall-clock and a stream-time punctuator, and
// external sinks fed by a fan-out and by a punctuator.
//
// Input: the topics Topics(prefix).Web and .App, keyed by account, JSON
// Event values, header event-id. The graph:
//
//	web, app ─Merge─ Dedup(event-ids) ─ LatestVersion(order-versions) ─ WithTimestamp(at)
//	  ├─ Count(accepted-per-account) → <prefix>-account-counts  (account, n-th accepted event)
//	  ├─ Process(tally) + punctuators: wall clock every second (when the
//	  │    task's tally changed), stream time every 10 s
//	  │    → <prefix>-ticks; the wall-clock ones also ToSink(tick-hook)
//	  └─ FlatMap(one line per item) ─ GroupBy(lines-by-item, repartition)
//	       ├─ Count(item-counts) → <prefix>-item-counts   (item, n-th line)
//	       ├─ ToSink(line-hook)                           (one delivery per line)
//	       └─ Through(<prefix>-lines) ─ GroupByKey(lines-by-item-again)
//	            ├─ tumbling 10 s, hopping 20 s every 10 s, sliding 5 s and
//	            │  session (gap 3 s) windows, each with Grace and EmitFinal,
//	            └─ counted → <prefix>-windows             (one WindowResult per closed window)
//
// Every stateful stage and store is named. The truth of an input is
// computed by internal/tooling/gen (PlanAllStages, SimulateAllStages).
package allstages

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// Event is one input event.
type Event struct {
	ID      string   `json:"id"`
	Account string   `json:"account"`
	Order   string   `json:"order"`
	Version uint64   `json:"version"`
	Amount  int64    `json:"amount"`
	Items   []string `json:"items"`
	At      int64    `json:"at"` // event time, milliseconds since the Unix epoch
}

// Line is one item of an accepted event: the fan-out's records.
type Line struct {
	EventID string `json:"event_id"`
	Index   int    `json:"index"`
	Item    string `json:"item"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
	At      int64  `json:"at"`
}

// Tick is a punctuator's output: the number of events the task (source
// partition) accepted so far, at the firing time.
type Tick struct {
	Kind      string `json:"kind"` // TickWall or TickStream
	Partition int32  `json:"partition"`
	Accepted  int64  `json:"accepted"`
	At        int64  `json:"at"` // the firing time, milliseconds
}

// Tick kinds.
const (
	TickWall   = "wall"
	TickStream = "stream"
)

// WindowResult is one window's final count.
type WindowResult struct {
	Kind  string `json:"kind"` // one of the Window constants
	Item  string `json:"item"`
	Start int64  `json:"start"` // milliseconds
	End   int64  `json:"end"`
	Count int64  `json:"count"`
}

// Window kinds, as in WindowResult.Kind.
const (
	WindowTumbling = "tumbling"
	WindowHopping  = "hopping"
	WindowSliding  = "sliding"
	WindowSession  = "session"
)

// WindowKinds lists the window kinds in the order of the graph.
var WindowKinds = []string{WindowTumbling, WindowHopping, WindowSliding, WindowSession}

// The windows and punctuators.
const (
	Tumbling       = 10 * time.Second
	HoppingSize    = 20 * time.Second
	HoppingAdvance = 10 * time.Second
	Sliding        = 5 * time.Second
	SessionGap     = 3 * time.Second
	// Grace is the grace of every window: records up to this much behind
	// the stage's stream time still count. The chaos run relies on no task
	// falling further behind another than that in event time.
	Grace = 2 * time.Minute

	WallInterval   = time.Second
	StreamInterval = 10 * time.Second

	// Retention is how long an event id is remembered, by event time.
	Retention = 7 * 24 * time.Hour
)

// Sink names (outbox, dead-letter and ledger names: never change them).
const (
	LineSink = "line-hook"
	TickSink = "tick-hook"
)

// Topics are the topology's topics for a prefix.
type Topics struct {
	Web, App      string // the two source topics
	AccountCounts string // per account, the count after each accepted event
	ItemCounts    string // per item, the count after each line
	Ticks         string // the punctuators' outputs
	Lines         string // the Through topic
	Windows       string // the windows' final results
}

// TopicsFor names the topics of prefix.
func TopicsFor(prefix string) Topics {
	return Topics{Web: prefix + "-web", App: prefix + "-app", AccountCounts: prefix + "-account-counts",
		ItemCounts: prefix + "-item-counts", Ticks: prefix + "-ticks", Lines: prefix + "-lines", Windows: prefix + "-windows"}
}

// Sinks are the external sinks: Lines receives one delivery per line (the
// Line as JSON, default idempotency key from the repartition topic's
// coordinates), Ticks one per wall-clock tick (the Tick as JSON, default
// key from the punctuator and its firing time). A nil sink leaves it out.
type Sinks struct {
	Lines sinks.Sink
	Ticks sinks.Sink
}

// eventCodec refuses an event without an id, account or order.
type eventCodec struct{ serde.Codec[Event] }

func (c eventCodec) Decode(b []byte) (Event, error) {
	e, err := c.Codec.Decode(b)
	switch {
	case err != nil:
		return e, err
	case e.ID == "" || e.Account == "" || e.Order == "":
		return e, errors.New("allstages: event without an id, account or order")
	}
	return e, nil
}

// tally is the tally stage's state per task.
type tally struct {
	Partition int32 `json:"partition"`
	Accepted  int64 `json:"accepted"`
	Emitted   int64 `json:"emitted"` // Accepted at the last wall-clock tick
}

const tallyKey = "tally"

// Topology builds the topology on prefix's topics.
func Topology(prefix string, s Sinks) *topology.Topology {
	tp := TopicsFor(prefix)
	t := topology.New("allstages")
	ec := eventCodec{serde.JSON[Event]()}
	in := topology.Merge(topology.Source(t, tp.Web, serde.String(), ec), topology.Source(t, tp.App, serde.String(), ec))
	fresh := topology.Dedup(in, "event-ids", topology.EventIDHeader("event-id"), Retention)
	current := topology.LatestVersion(fresh, "order-versions", func(_ string, e Event) (string, uint64) { return e.Order, e.Version })
	timed := topology.WithTimestamp(current, func(_ string, e Event) time.Time { return time.UnixMilli(e.At) })

	topology.To(topology.Count(timed, "accepted-per-account", serde.String()), tp.AccountCounts, serde.String(), serde.Int64())

	tallies := topology.Store(t, "tallies", serde.String(), serde.JSON[tally]())
	ticks := topology.Process(timed, "tally", func(ctx topology.Context[string, Tick], r topology.Record[string, Event]) error {
		tl, _, err := tallies.Get(ctx, tallyKey)
		if err != nil {
			return err
		}
		tl.Partition = ctx.Input().Partition
		tl.Accepted++
		return tallies.Put(ctx, tallyKey, tl)
	}, tallies)
	emit := func(kind string) topology.PunctuateFunc[string, Tick] {
		return func(ctx topology.Context[string, Tick], at time.Time) error {
			tl, ok, err := tallies.Get(ctx, tallyKey)
			if err != nil || !ok {
				return err
			}
			if kind == TickWall {
				if tl.Accepted == tl.Emitted {
					return nil
				}
				tl.Emitted = tl.Accepted
				if err := tallies.Put(ctx, tallyKey, tl); err != nil {
					return err
				}
			}
			tick := Tick{Kind: kind, Partition: tl.Partition, Accepted: tl.Accepted, At: at.UnixMilli()}
			return ctx.Forward(topology.Record[string, Tick]{Key: fmt.Sprintf("p%d", tl.Partition), Value: tick, Timestamp: at})
		}
	}
	topology.Punctuate(ticks, topology.WallClockTime, WallInterval, emit(TickWall))
	topology.Punctuate(ticks, topology.StreamTime, StreamInterval, emit(TickStream))
	topology.To(ticks, tp.Ticks, serde.String(), serde.JSON[Tick]())
	if s.Ticks != nil {
		wall := topology.Filter(ticks, func(_ string, tk Tick) bool { return tk.Kind == TickWall })
		topology.ToSink(wall, TickSink, s.Ticks, serde.JSON[Tick](), nil)
	}

	lines := topology.FlatMap(timed, func(_ string, e Event) ([]topology.KeyValue[string, Line], error) {
		out := make([]topology.KeyValue[string, Line], len(e.Items))
		for i, item := range e.Items {
			out[i] = topology.KeyValue[string, Line]{Key: item, Value: Line{EventID: e.ID, Index: i, Item: item, Account: e.Account, Amount: e.Amount, At: e.At}}
		}
		return out, nil
	})
	byItem := topology.GroupBy(lines, "lines-by-item", func(item string, _ Line) string { return item }, serde.String(), serde.JSON[Line]())
	topology.To(byItem.Count("item-counts"), tp.ItemCounts, serde.String(), serde.Int64())
	if s.Lines != nil {
		topology.ToSink(byItem.Stream(), LineSink, s.Lines, serde.JSON[Line](), nil)
	}

	thru := topology.Through(byItem.Stream(), tp.Lines, serde.String(), serde.JSON[Line]())
	again := topology.GroupByKey(thru, "lines-by-item-again", serde.String(), serde.JSON[Line]())
	windows := map[string]topology.Windows{
		WindowTumbling: topology.TumblingWindows(Tumbling),
		WindowHopping:  topology.HoppingWindows(HoppingSize, HoppingAdvance),
		WindowSliding:  topology.SlidingWindows(Sliding),
		WindowSession:  topology.SessionWindows(SessionGap),
	}
	var results []topology.Stream[string, WindowResult]
	for _, kind := range WindowKinds {
		counts := again.WindowedBy(windows[kind].WithGrace(Grace)).EmitFinal().Count(kind + "-counts")
		results = append(results, topology.Map(counts, func(w topology.Windowed[string], n int64) (string, WindowResult, error) {
			return w.Key, WindowResult{Kind: kind, Item: w.Key, Start: w.Start.UnixMilli(), End: w.End.UnixMilli(), Count: n}, nil
		}))
	}
	topology.To(topology.Merge(results...), tp.Windows, serde.String(), serde.JSON[WindowResult]())
	return t
}

// DecodeCount decodes a count output's value (serde.Int64: 8 bytes
// big-endian).
func DecodeCount(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("allstages: count of %d bytes", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
