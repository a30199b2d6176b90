package engine

// The task set of a session's driver: which claim each partition it
// processes belongs to, the generation it last saw, and the store tasks it
// owns. Claims come and go within a session (claims.go); the driver keeps
// this bookkeeping, and does the I/O around it.

import (
	"slices"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/statestore"
)

// taskSet is the partitions, claims and owned store tasks of a session;
// it does no I/O.
type taskSet struct {
	g *graph.Graph
	// active maps each partition the driver processes to its claim: a
	// batch of another claim (revoked since) is dropped.
	active map[topicPartition]uint64
	gen    int32  // the generation last seen
	keep   keeper // the store tasks owned, and their last-owned marks (staleness.go)
}

func newTaskSet(g *graph.Graph, gen int32, keep keeper) *taskSet {
	return &taskSet{g: g, active: map[topicPartition]uint64{}, gen: gen, keep: keep}
}

// has reports whether claim is the one partition tp is processed for.
func (t *taskSet) has(tp topicPartition, claim uint64) bool {
	return t.active[tp] == claim
}

// add makes tp the driver's, for claim.
func (t *taskSet) add(tp topicPartition, claim uint64) { t.active[tp] = claim }

// remove drops tp and reports whether any partition of its task is left.
func (t *taskSet) remove(tp topicPartition, task statestore.Task) (left bool) {
	delete(t.active, tp)
	for other := range t.active {
		if t.g.Source(other.topic) != nil && other.partition == task.Partition && t.g.SubTopologyOf(other.topic) == task.SubTopology {
			return true
		}
	}
	return false
}

// own adds store tasks to those owned.
func (t *taskSet) own(sts []statestore.StoreTask) {
	for _, st := range sts {
		if !slices.Contains(t.keep.owned, st) {
			t.keep.owned = append(t.keep.owned, st)
		}
	}
}

// disown drops the store tasks of task from those owned and returns them.
func (t *taskSet) disown(task statestore.Task) (gone []statestore.StoreTask) {
	t.keep.owned = slices.DeleteFunc(t.keep.owned, func(st statestore.StoreTask) bool {
		if st.Task == task {
			gone = append(gone, st)
			return true
		}
		return false
	})
	return gone
}

// claims are the partitions the driver processes, per topic, sorted.
func (t *taskSet) claims() map[string][]int32 {
	out := map[string][]int32{}
	for tp := range t.active {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// generation notes the group's generation and reports whether it is new.
func (t *taskSet) generation(gen int32) bool {
	if gen == t.gen {
		return false
	}
	t.gen = gen
	return true
}
