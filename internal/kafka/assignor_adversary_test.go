package kafka

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// Random group histories against the task assignor: members join, leave
// and come back with the tasks of a generation long past (stale user
// data), some of them still holding the partitions of that generation (a
// member the group evicted that joins again with its claims), some read
// only part of the topics, one of two merged topics and a repartition
// topic's neighbour grow alone, and a member may read nothing the group
// reads. In every round of the cooperative protocol each task goes whole
// to one member, and no member starts a task another holds; once the
// rounds settle, only partitions every topic of the task has are
// assigned, and every such task goes to someone when a member reads all
// its topics.
func TestAdversaryTaskAssignorRandomHistories(t *testing.T) {
	subOf := map[string]int32{"ma": 0, "mb": 0, "app-rep": 1, "side": 1, "solo": 2}
	for seed := range uint64(40) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		parts := map[string]int32{"ma": 4, "mb": 4, "app-rep": 6, "side": 6, "solo": 3}
		g := newTestGroup(t, subOf, parts)
		parked := map[string]*taskAssignor{}          // members away, with their last assignment
		parkedHeld := map[string]map[string][]int32{} // and what they held then
		all := slices.Sorted(maps.Keys(parts))
		for step := range 30 {
			id := fmt.Sprintf("r%d", rnd.IntN(6))
			switch op := rnd.IntN(6); {
			case op <= 1:
				if a, ok := parked[id]; ok {
					g.members[id] = a // back with the tasks of its last generation
					if rnd.IntN(2) == 0 {
						g.held[id] = parkedHeld[id] // and still holding them
					}
					delete(parked, id)
				} else if g.members[id] == nil {
					g.join(id)
				}
				switch rnd.IntN(4) {
				case 0: // reads part of the topics
					sub := slices.DeleteFunc(slices.Clone(all), func(string) bool { return rnd.IntN(2) == 0 })
					g.subscribe[id] = append(sub, "elsewhere") // never empty: check counts an empty one as all
				case 1: // reads nothing the group reads
					g.subscribe[id] = []string{"elsewhere"}
				default:
					delete(g.subscribe, id)
				}
			case op == 2 && len(g.members) > 1:
				if a, ok := g.members[id]; ok {
					parked[id] = a
					parkedHeld[id] = g.held[id]
					g.leave(id)
				}
			case op == 3:
				topic := all[rnd.IntN(len(all))]
				n := int32(len(g.topics[topic]))
				g.topics[topic] = append(g.topics[topic], n) // one topic grows alone
			}
			if len(g.members) == 0 {
				g.join("r0")
			}
			out := g.rebalance()
			if t.Failed() {
				t.Fatalf("seed %d step %d: subscribe %v out %v", seed, step, g.subscribe, out)
			}
			checkWholeTasks(t, fmt.Sprintf("seed %d step %d", seed, step), subOf, g, out)
		}
	}
}

// checkWholeTasks checks what check does not: only whole tasks are
// assigned, each once, and none is left out that a member could take.
func checkWholeTasks(t *testing.T, at string, subOf map[string]int32, g *testGroup, out map[string]map[string][]int32) {
	t.Helper()
	groups := taskGroups(subOf, g.topics)
	owner := map[Task]string{}
	for id, topics := range out {
		for topic, ps := range topics {
			for _, p := range ps {
				task := Task{subOf[topic], p}
				if o, ok := owner[task]; ok && o != id {
					t.Fatalf("%s: task %v held by %s and %s", at, task, o, id)
				}
				owner[task] = id
			}
		}
	}
	for _, tg := range groups {
		readers := 0
		for id := range out {
			topics := g.subscribe[id]
			if topics == nil {
				topics = slices.Sorted(maps.Keys(g.topics))
			}
			if subscribesAll(topics, tg.topics) {
				readers++
			}
		}
		for _, p := range tg.partitions {
			id, ok := owner[Task{tg.sub, p}]
			if !ok {
				if readers > 0 {
					t.Errorf("%s: task %d_%d left out though %d members read all its topics", at, tg.sub, p, readers)
				}
				continue
			}
			for _, topic := range tg.topics {
				if !slices.Contains(out[id][topic], p) {
					t.Errorf("%s: %s holds task %d_%d without %s[%d]", at, id, tg.sub, p, topic, p)
				}
			}
		}
		for task, id := range owner {
			if task.SubTopology == tg.sub && !slices.Contains(tg.partitions, task.Partition) {
				t.Errorf("%s: %s holds task %v, which not every topic of %v has", at, id, task, tg.topics)
			}
		}
	}
}
