package engine

// The punctuation schedule of a session: which punctuators are due, and
// on which tasks. It does no I/O; the driver fires what it yields inside
// the open transaction (timers.go).

import (
	"iter"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/statestore"
)

// timerSchedule keeps when each punctuator of a session fires next, per
// task. A rewind starts it afresh with the next session.
type timerSchedule struct {
	g      *graph.Graph
	sched  graph.Schedule
	stream map[int][]graph.TimerRef // stream-time timers by sub-topology, listed once: asked after every batch
}

func newTimerSchedule(g *graph.Graph) *timerSchedule {
	t := &timerSchedule{g: g, stream: map[int][]graph.TimerRef{}}
	for sub := range g.SubTopologies {
		t.stream[sub] = g.Timers(sub, graph.StreamTime)
	}
	return t
}

// wallEvery is how often a session checks its wall-clock punctuators: a
// quarter of the shortest interval, within [10 ms, 1 s]; 0 when there are
// none.
func (t *timerSchedule) wallEvery() time.Duration {
	if !t.g.HasTimers(graph.WallClock) {
		return 0
	}
	every := time.Second
	for _, n := range t.g.Nodes {
		for _, tm := range n.Timers {
			if tm.Kind == graph.WallClock {
				every = min(every, max(tm.Every/4, 10*time.Millisecond))
			}
		}
	}
	return every
}

// hasStream reports whether sub has stream-time punctuators.
func (t *timerSchedule) hasStream(sub int) bool { return len(t.stream[sub]) > 0 }

// streamDue yields the stream-time punctuators of task due at stream time
// now, each moved past now as it is yielded.
func (t *timerSchedule) streamDue(task statestore.Task, now time.Time) iter.Seq[graph.TimerRef] {
	return func(yield func(graph.TimerRef) bool) {
		for _, tm := range t.stream[task.SubTopology] {
			if t.sched.Due(tm, task.Partition, now) && !yield(tm) {
				return
			}
		}
	}
}

// wallDue yields the wall-clock punctuators due at now on the tasks of
// claims (once per task, not once per source of its sub-topology), each
// moved past now as it is yielded.
func (t *timerSchedule) wallDue(claims map[string][]int32, now time.Time) iter.Seq2[graph.TimerRef, statestore.Task] {
	return func(yield func(graph.TimerRef, statestore.Task) bool) {
		for topic, parts := range claims {
			if t.g.Source(topic) == nil {
				continue
			}
			sub := t.g.SubTopologyOf(topic)
			if t.g.Source(topic) != t.firstSource(sub) {
				continue // a sub-topology's task once, not once per source
			}
			for _, tm := range t.g.Timers(sub, graph.WallClock) {
				for _, p := range parts {
					if t.sched.Due(tm, p, now) && !yield(tm, statestore.Task{SubTopology: sub, Partition: p}) {
						return
					}
				}
			}
		}
	}
}

// firstSource is the source of sub whose topic sorts first.
func (t *timerSchedule) firstSource(sub int) *graph.Node {
	for _, topic := range t.g.SourceTopics() {
		if t.g.SubTopologyOf(topic) == sub {
			return t.g.Source(topic)
		}
	}
	return nil
}
