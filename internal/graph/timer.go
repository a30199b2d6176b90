package graph

import (
	"errors"
	"time"
)

// TimeKind says which clock a timer follows.
type TimeKind int

const (
	// StreamTime timers fire as a task's stream time (the largest record
	// timestamp it has seen, bounded by the wall clock) passes them.
	StreamTime TimeKind = iota
	// WallClock timers fire as the replica's clock passes them.
	WallClock
)

// Timer is a punctuator of a node: Fire runs every Every, per task, with
// the node's stores and children, inside the task's transaction.
type Timer struct {
	Kind  TimeKind
	Every time.Duration
	Fire  func(c *Context, at time.Time) error
}

// TimerRef names one timer of the graph.
type TimerRef struct {
	Node  *Node
	Index int
}

// Timer returns the timer r names.
func (r TimerRef) Timer() *Timer { return &r.Node.Timers[r.Index] }

// Timers lists the timers of kind in sub-topology sub.
func (g *Graph) Timers(sub int, kind TimeKind) []TimerRef {
	var out []TimerRef
	for _, n := range g.Nodes {
		if g.nodeSub[n.ID] != sub {
			continue
		}
		for i, t := range n.Timers {
			if t.Kind == kind {
				out = append(out, TimerRef{Node: n, Index: i})
			}
		}
	}
	return out
}

// HasTimers reports whether any node has a timer of kind.
func (g *Graph) HasTimers(kind TimeKind) bool {
	for _, n := range g.Nodes {
		for _, t := range n.Timers {
			if t.Kind == kind {
				return true
			}
		}
	}
	return false
}

// Schedule keeps when each timer fires next, per partition. The zero
// Schedule is ready to use; a timer's first firing is one interval after
// the time it is first asked about.
type Schedule struct {
	next map[scheduleKey]time.Time
}

type scheduleKey struct {
	node, timer int
	partition   int32
}

// Due reports whether timer r is due on partition at now, and if so moves
// its next firing past now: one firing however many intervals were
// missed (a gap in the input, a pause), as Kafka Streams does.
func (s *Schedule) Due(r TimerRef, partition int32, now time.Time) bool {
	if s.next == nil {
		s.next = map[scheduleKey]time.Time{}
	}
	k := scheduleKey{r.Node.ID, r.Index, partition}
	every := r.Timer().Every
	next, ok := s.next[k]
	if !ok {
		s.next[k] = now.Add(every)
		return false
	}
	if now.Before(next) {
		return false
	}
	missed := now.Sub(next) / every
	s.next[k] = next.Add((missed + 1) * every)
	return true
}

// Punctuate runs a timer of node at time at, reusing c, as Run runs a
// record: Fire forwards to the node's children, reads and writes the
// node's stores through st, and its outputs and rejections go to out. in
// stands for the input record (there is none: its coordinates name the
// task). after is, for a stream-time firing, the coordinates
// ("topic/partition/offset") of the consumed record whose stream time
// brought the timer due ("" for a wall-clock one): one stream time can
// bring a timer due again in a later session (stream time is not kept
// for every task), the record cannot. An error fails the whole
// punctuation.
func (c *Context) Punctuate(r TimerRef, at time.Time, after string, in *Input, out Emitter, st State) error {
	*c = Context{node: r.Node, input: in, out: out, state: st, outboxSeq: c.outboxSeq[:0],
		punct: punctuation{on: true, timer: r.Index, at: at, after: after}}
	err := r.Timer().Fire(c, at)
	if c.failed != nil {
		return c.failed
	}
	if rej, ok := errors.AsType[*Rejection](err); ok {
		if rej.Node == "" {
			rej.Node = r.Node.Name
		}
		return out.Reject(rej)
	}
	if err != nil {
		return &NodeError{Node: r.Node.Name, Err: err}
	}
	return nil
}
