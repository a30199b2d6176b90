package engine

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/statestore"
)

// The schedule yields the punctuators due, without a broker: a wall-clock
// one once per task of a sub-topology that reads two sources, not on a
// partition of a topic that is no source, and each only once per interval;
// a stream-time one on the task's stream time. The wall clock is checked
// at a quarter of the shortest interval.
func TestTimerScheduleYieldsDuePunctuators(t *testing.T) {
	noop := func(*graph.Context, time.Time) error { return nil }
	p := &graph.Node{ID: 2, Name: "p", Kind: graph.KindProcessor, Timers: []graph.Timer{
		{Kind: graph.WallClock, Every: 100 * time.Millisecond, Fire: noop},
		{Kind: graph.StreamTime, Every: time.Minute, Fire: noop},
	}}
	a1 := &graph.Node{ID: 0, Name: "a1", Kind: graph.KindSource, Topic: "a1", Children: []*graph.Node{p}}
	a2 := &graph.Node{ID: 1, Name: "a2", Kind: graph.KindSource, Topic: "a2", Children: []*graph.Node{p}}
	q := &graph.Node{ID: 4, Name: "q", Kind: graph.KindProcessor, Timers: []graph.Timer{{Kind: graph.WallClock, Every: 2 * time.Second, Fire: noop}}}
	b := &graph.Node{ID: 3, Name: "b", Kind: graph.KindSource, Topic: "b", Children: []*graph.Node{q}}
	g := graph.New("app", []*graph.Node{a1, a2, p, b, q})
	subA, subB := g.SubTopologyOf("a1"), g.SubTopologyOf("b")
	ts := newTimerSchedule(g)

	if got := ts.wallEvery(); got != 25*time.Millisecond {
		t.Errorf("wall-clock check every %v, want 25ms", got)
	}
	if none := newTimerSchedule(graph.New("none", []*graph.Node{{ID: 0, Name: "s", Kind: graph.KindSource, Topic: "s"}})); none.wallEvery() != 0 {
		t.Errorf("a graph without wall-clock timers is checked every %v, want never", none.wallEvery())
	}
	if !ts.hasStream(subA) || ts.hasStream(subB) {
		t.Errorf("stream-time timers: sub-topology a %v, b %v; want true, false", ts.hasStream(subA), ts.hasStream(subB))
	}

	claims := map[string][]int32{"a1": {0, 1}, "a2": {0, 1}, "b": {0}, "out": {0}}
	due := func(now time.Time) map[string]int {
		out := map[string]int{}
		for tm, task := range ts.wallDue(claims, now) {
			out[tm.Node.Name+" "+taskName(task.SubTopology, task.Partition)]++
		}
		return out
	}
	t0 := time.Unix(1_000_000, 0)
	if got := due(t0); len(got) != 0 {
		t.Errorf("at the first check: %v due, want none (each fires one interval after)", got)
	}
	got := due(t0.Add(100 * time.Millisecond))
	if len(got) != 2 || got["p "+taskName(subA, 0)] != 1 || got["p "+taskName(subA, 1)] != 1 {
		t.Errorf("after 100ms: %v, want p once on each task of sub-topology a", got)
	}
	if got := due(t0.Add(150 * time.Millisecond)); len(got) != 0 {
		t.Errorf("after 150ms: %v, want none (p fired at 100ms)", got)
	}
	if got := due(t0.Add(2 * time.Second)); len(got) != 3 || got["q "+taskName(subB, 0)] != 1 {
		t.Errorf("after 2s: %v, want p on two tasks and q on one", got)
	}

	task := statestore.Task{SubTopology: subA, Partition: 1}
	stream := func(now time.Time) int {
		n := 0
		for tm := range ts.streamDue(task, now) {
			if tm.Timer().Kind != graph.StreamTime {
				t.Errorf("streamDue yielded a %v timer", tm.Timer().Kind)
			}
			n++
		}
		return n
	}
	if n := stream(t0); n != 0 {
		t.Errorf("stream-time timers due at first: %d, want 0", n)
	}
	if n := stream(t0.Add(59 * time.Second)); n != 0 {
		t.Errorf("stream-time timers due after 59s: %d, want 0", n)
	}
	if n := stream(t0.Add(time.Minute)); n != 1 {
		t.Errorf("stream-time timers due after a minute: %d, want 1", n)
	}
}
