package topology

import (
	"time"

	"github.com/onceflow/onceflow/internal/graph"
)

// TimeKind says which clock a punctuator follows.
type TimeKind int

const (
	// StreamTime punctuators fire as a task's stream time passes each
	// interval: the largest record timestamp the task has seen, bounded
	// by the wall clock plus the allowed clock skew. A task that receives
	// nothing does not fire them.
	StreamTime TimeKind = iota
	// WallClockTime punctuators fire as the replica's clock passes each
	// interval, input or not.
	WallClockTime
)

// PunctuateFunc is a punctuator: it runs at time at (stream time or wall
// clock) with the context of the Process stage it belongs to, so it can
// read and write that stage's stores and Forward records to the stage's
// children.
type PunctuateFunc[K, V any] func(ctx Context[K, V], at time.Time) error

// Punctuate schedules fn every interval, per task, on the Process stage
// that produced s (Kafka Streams' ProcessorContext.schedule). The first
// firing comes one interval after the task starts (after its first record,
// for stream time); when intervals are missed (a gap in the input, a
// pause) it fires once and goes on from there.
//
// A punctuation is exactly-once like a record: its state changes and
// outputs join the task's open transaction and commit, or are discarded,
// with it. Its outputs carry the lineage "punctuator/<stage>/<task>" in
// the onceflow-source header; its deliveries to a sink (ToSink) have
// default idempotency keys of their own per firing, from that lineage,
// the punctuator's index on the stage and the time of the firing (and,
// for stream time, the record after which it fired). An error discards what the punctuation did
// and is logged; the punctuator runs again at its next interval.
func Punctuate[K, V any](s Stream[K, V], kind TimeKind, interval time.Duration, fn PunctuateFunc[K, V]) {
	if s.t == nil || s.node == nil {
		return
	}
	n := s.node
	switch {
	case n.Op != "process":
		s.t.errorf("punctuate: %s %q is not a Process stage: a punctuator belongs to the Process stage whose stores it uses", n.Op, n.Name)
		return
	case fn == nil:
		s.t.errorf("punctuate %q: function is nil", n.Name)
		return
	case interval < time.Millisecond:
		s.t.errorf("punctuate %q: interval %v must be at least 1ms", n.Name, interval)
		return
	case kind == StreamTime && len(n.Stores) == 0:
		s.t.errorf("punctuate %q: a stream-time punctuator needs its Process stage to declare a store (stream time is task state)", n.Name)
		return
	case kind != StreamTime && kind != WallClockTime:
		s.t.errorf("punctuate %q: unknown time kind %d", n.Name, kind)
		return
	}
	gk := graph.StreamTime
	if kind == WallClockTime {
		gk = graph.WallClock
	}
	n.Timers = append(n.Timers, graph.Timer{Kind: gk, Every: interval, Fire: func(c *graph.Context, at time.Time) error {
		return fn(Context[K, V]{c: c}, at)
	}})
}
