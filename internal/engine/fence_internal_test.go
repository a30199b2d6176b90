package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/statestore"
)

// A transaction without input proves the generation with the positions of
// the claimed source partitions of the tasks it wrote for (of all when it
// names none), fetching from the group only those the session does not
// know; no broker.
func TestFenceProvesTheGeneration(t *testing.T) {
	g := graph.New("app", []*graph.Node{
		{ID: 0, Name: "in", Kind: graph.KindSource, Topic: "in"},
		{ID: 1, Name: "b", Kind: graph.KindSource, Topic: "b"},
	})
	claims := map[string][]int32{"in": {0, 1}, "b": {0}, "out": {0}}
	var asked []map[string][]int32
	fetch := func(_ context.Context, missing map[string][]int32) (map[string]map[int32]int64, error) {
		asked = append(asked, missing)
		out := map[string]map[int32]int64{}
		for topic, ps := range missing {
			out[topic] = map[int32]int64{}
			for _, p := range ps {
				out[topic][p] = int64(100 + p)
			}
		}
		return out, nil
	}
	same := func(a, b map[string][]int32) bool {
		for _, ps := range a {
			slices.Sort(ps)
		}
		return maps.EqualFunc(a, b, slices.Equal[[]int32])
	}
	var f fence
	f.committed(map[string]map[int32]int64{"in": {0: 5}})
	got, err := f.proof(context.Background(), g, claims, fetch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]int64{"in": {0: 5, 1: 101}, "b": {0: 100}}
	if !maps.EqualFunc(got, want, maps.Equal[map[int32]int64]) {
		t.Errorf("proof %v, want %v", got, want)
	}
	if len(asked) != 1 || !same(asked[0], map[string][]int32{"in": {1}, "b": {0}}) {
		t.Errorf("asked the group for %v, want in/1 and b/0 once", asked)
	}
	if _, err := f.proof(context.Background(), g, claims, fetch); err != nil || len(asked) != 1 {
		t.Errorf("a second proof asked the group again (%v, %v)", asked, err)
	}

	f.wrote(statestore.Task{SubTopology: g.SubTopologyOf("in"), Partition: 1})
	got, _ = f.proof(context.Background(), g, claims, fetch)
	if want := map[string]map[int32]int64{"in": {1: 101}}; !maps.EqualFunc(got, want, maps.Equal[map[int32]int64]) {
		t.Errorf("proof of a transaction that wrote for in's task 1: %v, want %v", got, want)
	}
	f.reset()
	f.forget(topicPartition{"in", 0})
	if _, err := f.proof(context.Background(), g, claims, fetch); err != nil || len(asked) != 2 || !same(asked[1], map[string][]int32{"in": {0}}) {
		t.Errorf("after forgetting in/0: asked %v (%v), want in/0 fetched again", asked, err)
	}

	if _, err := f.proof(context.Background(), g, map[string][]int32{"out": {0}}, fetch); !errors.Is(err, errNothingToFence) {
		t.Errorf("no claimed source partition: %v, want errNothingToFence", err)
	}
	down := errors.New("coordinator down")
	var empty fence
	if _, err := empty.proof(context.Background(), g, claims, func(context.Context, map[string][]int32) (map[string]map[int32]int64, error) { return nil, down }); !errors.Is(err, down) {
		t.Errorf("positions unavailable: %v, want it wrapped", err)
	}
}
