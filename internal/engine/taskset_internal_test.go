package engine

import (
	"maps"
	"slices"
	"testing"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/statestore"
)

// The task set knows each partition's claim, whether a revoked
// partition's task has partitions left (co-partitioned sources of one
// sub-topology), the store tasks owned and the generation; no broker.
func TestTaskSetTracksClaimsAndOwnership(t *testing.T) {
	// Sub-topology 0 reads "orders" and "payments" (a join), 1 reads "clicks".
	join := &graph.Node{ID: 2, Name: "join", Kind: graph.KindProcessor}
	orders := &graph.Node{ID: 0, Name: "orders", Kind: graph.KindSource, Topic: "orders", Children: []*graph.Node{join}}
	payments := &graph.Node{ID: 1, Name: "payments", Kind: graph.KindSource, Topic: "payments", Children: []*graph.Node{join}}
	clicks := &graph.Node{ID: 3, Name: "clicks", Kind: graph.KindSource, Topic: "clicks"}
	g := graph.New("app", []*graph.Node{orders, payments, join, clicks})
	sub := g.SubTopologyOf("orders")
	if g.SubTopologyOf("payments") != sub || g.SubTopologyOf("clicks") == sub {
		t.Fatalf("sub-topologies: orders %d, payments %d, clicks %d", sub, g.SubTopologyOf("payments"), g.SubTopologyOf("clicks"))
	}
	ts := newTaskSet(g, 3, keeper{})
	ts.add(topicPartition{"orders", 1}, 10)
	ts.add(topicPartition{"payments", 1}, 11)
	ts.add(topicPartition{"clicks", 1}, 12)
	ts.add(topicPartition{"orders", 0}, 13)
	if !ts.has(topicPartition{"orders", 1}, 10) || ts.has(topicPartition{"orders", 1}, 9) || ts.has(topicPartition{"orders", 2}, 10) {
		t.Errorf("has: a partition is processed for its own claim only")
	}
	want := map[string][]int32{"orders": {0, 1}, "payments": {1}, "clicks": {1}}
	if got := ts.claims(); !maps.EqualFunc(got, want, slices.Equal[[]int32]) {
		t.Errorf("claims %v, want %v", got, want)
	}

	task := statestore.Task{SubTopology: sub, Partition: 1}
	st := func(store string, task statestore.Task) statestore.StoreTask {
		return statestore.StoreTask{Store: store, Task: task}
	}
	other := statestore.Task{SubTopology: sub, Partition: 0}
	ts.own([]statestore.StoreTask{st("totals", task), st("totals", other)})
	ts.own([]statestore.StoreTask{st("totals", task)})
	if len(ts.keep.owned) != 2 {
		t.Errorf("owned %v, want each store task once", ts.keep.owned)
	}
	if ts.remove(topicPartition{"orders", 1}, task) != true {
		t.Errorf("orders/1 revoked: payments/1 of the same task is left, remove says none")
	}
	if ts.remove(topicPartition{"payments", 1}, task) != false {
		t.Errorf("payments/1 revoked: clicks/1 is another sub-topology's, remove says the task has partitions left")
	}
	if gone := ts.disown(task); len(gone) != 1 || gone[0] != st("totals", task) || len(ts.keep.owned) != 1 {
		t.Errorf("disown: gone %v, owned %v; want the task's store task gone, the other kept", gone, ts.keep.owned)
	}
	if ts.generation(3) || !ts.generation(4) || ts.generation(4) {
		t.Errorf("generation: 3 is the one seen, 4 is new once")
	}
}
