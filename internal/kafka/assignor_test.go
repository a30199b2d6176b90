package kafka

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// testGroup is a test group: members by instance id, each with what it
// assigned last (the assignor's own state) and the partitions its session
// holds (what sarama reports as OwnedPartitions).
type testGroup struct {
	t         *testing.T
	subOf     map[string]int32
	topics    map[string][]int32
	members   map[string]*taskAssignor // instance id → assignor
	held      map[string]map[string][]int32
	heldGen   map[string]int32
	gen       int32
	rounds    int                 // of the last rebalance
	subscribe map[string][]string // instance id → topics (default: all)
}

func newTestGroup(t *testing.T, subOf map[string]int32, parts map[string]int32) *testGroup {
	g := &testGroup{t: t, subOf: subOf, topics: map[string][]int32{}, members: map[string]*taskAssignor{}, subscribe: map[string][]string{},
		held: map[string]map[string][]int32{}, heldGen: map[string]int32{}}
	for topic, n := range parts {
		for p := range n {
			g.topics[topic] = append(g.topics[topic], p)
		}
	}
	return g
}

func (g *testGroup) join(ids ...string) {
	for _, id := range ids {
		g.members[id] = newTaskAssignor(id, g.subOf, time.Second)
	}
}

func (g *testGroup) leave(ids ...string) {
	for _, id := range ids {
		delete(g.members, id)
		delete(g.held, id)
	}
}

// rebalance runs the cooperative protocol the way sarama does: rounds of
// every member's subscription (with what it holds), the leader's plan and
// user data, each member's OnAssignment, each member revoking what it
// holds and was not assigned and starting what it was; while a member
// revoked something, it joins again for a follow-up round. Each round is
// checked: whole tasks only, and no member starts a task another member
// held when the round began. It returns the last round's assignment,
// member → topic → partitions, checked in full.
func (g *testGroup) rebalance() map[string]map[string][]int32 {
	g.t.Helper()
	for g.rounds = 1; ; g.rounds++ {
		out, revoked := g.round()
		if !revoked {
			g.check(out)
			return out
		}
		if g.rounds >= 5 {
			g.t.Fatalf("generation %d: still revoking after %d rounds: %v", g.gen, g.rounds, out)
		}
	}
}

// round runs one generation and reports whether a member revoked a
// partition.
func (g *testGroup) round() (map[string]map[string][]int32, bool) {
	g.t.Helper()
	g.gen++
	all := slices.Sorted(maps.Keys(g.topics))
	md := map[string]sarama.ConsumerGroupMemberMetadata{}
	for id, a := range g.members {
		ud, err := a.SubscriptionUserData(all)
		if err != nil {
			g.t.Fatal(err)
		}
		topics := all
		if ts, ok := g.subscribe[id]; ok {
			topics = ts
		}
		var owned []*sarama.OwnedPartition
		for _, topic := range slices.Sorted(maps.Keys(g.held[id])) {
			owned = append(owned, &sarama.OwnedPartition{Topic: topic, Partitions: slices.Clone(g.held[id][topic])})
		}
		md["member-"+id] = sarama.ConsumerGroupMemberMetadata{Version: 2, Topics: topics, UserData: ud, OwnedPartitions: owned, GenerationID: g.heldGen[id]}
	}
	var leader *taskAssignor
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		leader = g.members[id]
		break
	}
	plan, err := leader.Plan(md, g.topics)
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string]map[string][]int32{}
	for id, a := range g.members {
		topics := plan["member-"+id]
		ud, err := leader.AssignmentData("member-"+id, topics, g.gen)
		if err != nil {
			g.t.Fatal(err)
		}
		a.OnAssignment(&sarama.ConsumerGroupMemberAssignment{Topics: topics, UserData: ud}, g.gen)
		for _, ps := range topics {
			slices.Sort(ps)
		}
		out[id] = topics
	}
	// Whoever held a task when the round began.
	heldBy := map[Task][]string{}
	for id, topics := range g.held {
		for topic, ps := range topics {
			for _, p := range ps {
				t := Task{g.subOf[topic], p}
				if !slices.Contains(heldBy[t], id) {
					heldBy[t] = append(heldBy[t], id)
				}
			}
		}
	}
	revoked := false
	for id, topics := range out {
		for topic, ps := range g.held[id] {
			for _, p := range ps {
				if !slices.Contains(topics[topic], p) {
					revoked = true
				}
			}
		}
		for topic, ps := range topics {
			for _, p := range ps {
				t := Task{g.subOf[topic], p}
				if slices.ContainsFunc(heldBy[t], func(h string) bool { return h != id }) {
					g.t.Errorf("generation %d: %s starts task %v (%s[%d]) while %v hold it", g.gen, id, t, topic, p, heldBy[t])
				}
			}
		}
		g.checkWhole(id, topics)
		g.held[id] = topics
		g.heldGen[id] = g.gen
	}
	return out, revoked
}

// checkWhole asserts that a member's topics hold every partition of each
// task they touch.
func (g *testGroup) checkWhole(id string, topics map[string][]int32) {
	g.t.Helper()
	for topic, ps := range topics {
		for _, p := range ps {
			for other, sub := range g.subOf {
				if sub == g.subOf[topic] && slices.Contains(g.topics[other], p) && len(g.topics[topic]) > 0 &&
					slices.Contains(g.tasksTopics(sub, p), other) && !slices.Contains(topics[other], p) {
					g.t.Errorf("generation %d: %s holds %s[%d] without %s[%d]", g.gen, id, topic, p, other, p)
				}
			}
		}
	}
}

// tasksTopics lists the topics of sub that have partition p: a task's
// topics.
func (g *testGroup) tasksTopics(sub int32, p int32) []string {
	var out []string
	for topic, s := range g.subOf {
		if s == sub && slices.Contains(g.topics[topic], p) {
			out = append(out, topic)
		}
	}
	return out
}

// check asserts the assignor's promises: every partition of a task to one
// member, every task assigned once, per sub-topology counts within one,
// and each member's Assignment agreeing with its topics.
func (g *testGroup) check(out map[string]map[string][]int32) {
	g.t.Helper()
	owner := map[Task]string{}
	perSub := map[int32]map[string]int{}
	for id, topics := range out {
		for topic, ps := range topics {
			for _, p := range ps {
				task := Task{g.subOf[topic], p}
				if o, ok := owner[task]; ok && o != id {
					g.t.Fatalf("generation %d: task %v split between %s and %s: %v", g.gen, task, o, id, out)
				}
				owner[task] = id
			}
		}
		as, ok := g.members[id].assignment(g.gen)
		if !ok {
			g.t.Fatalf("%s knows no assignment of generation %d", id, g.gen)
		}
		for _, task := range as.Tasks {
			if perSub[task.SubTopology] == nil {
				perSub[task.SubTopology] = map[string]int{}
			}
			perSub[task.SubTopology][id]++
			if as.Owners[task] != id {
				g.t.Errorf("%s: owner of its task %v is %q", id, task, as.Owners[task])
			}
			for topic, sub := range g.subOf {
				if sub == task.SubTopology && slices.Contains(g.topics[topic], task.Partition) && !slices.Contains(topics[topic], task.Partition) {
					g.t.Errorf("%s: task %v lacks %s[%d]", id, task, topic, task.Partition)
				}
			}
		}
		if len(as.Owners) == 0 && len(out) > 0 && len(owner) > 0 {
			g.t.Errorf("%s: no owners in its assignment", id)
		}
	}
	for sub, counts := range perSub {
		lo, hi := -1, 0
		for id := range out {
			if len(g.subscribe[id]) > 0 {
				continue // not eligible everywhere
			}
			n := counts[id]
			if lo < 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		if hi-lo > 1 {
			g.t.Errorf("generation %d: sub-topology %d unbalanced: %v", g.gen, sub, counts)
		}
	}
}

// tasksOf lists a member's tasks as "sub_partition", sorted.
func tasksOf(subOf map[string]int32, topics map[string][]int32) []string {
	set := map[string]bool{}
	for topic, ps := range topics {
		for _, p := range ps {
			set[Task{subOf[topic], p}.String()] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Two merged topics: partition p of both goes to one member, 3:3 (the
// sticky strategy split them: ma[0 2] mb[1 2 3 4] against ma[1 3 4 5]
// mb[0 5]).
func TestTaskAssignorKeepsTasksWhole(t *testing.T) {
	subOf := map[string]int32{"ma": 0, "mb": 0}
	for members := 1; members <= 7; members++ {
		g := newTestGroup(t, subOf, map[string]int32{"ma": 6, "mb": 6})
		for i := range members {
			g.join(fmt.Sprintf("r%d", i+1))
		}
		out := g.rebalance()
		for id, topics := range out {
			if !reflect.DeepEqual(topics["ma"], topics["mb"]) {
				t.Errorf("%d members: %s has ma%v mb%v", members, id, topics["ma"], topics["mb"])
			}
		}
	}
}

// Two sub-topologies (a source and the repartition topic it writes): each
// is balanced on its own, and the totals too.
func TestTaskAssignorBalancesEachSubTopology(t *testing.T) {
	subOf := map[string]int32{"in": 0, "app-by-key": 1, "other": 2}
	g := newTestGroup(t, subOf, map[string]int32{"in": 6, "app-by-key": 6, "other": 1})
	g.join("r1", "r2")
	out := g.rebalance()
	for id, topics := range out {
		if len(topics["in"]) != 3 || len(topics["app-by-key"]) != 3 {
			t.Errorf("%s: in%v app-by-key%v, want 3 of each", id, topics["in"], topics["app-by-key"])
		}
	}
	// Single-task sub-topologies spread over the members.
	subOf = map[string]int32{"a": 0, "b": 1, "c": 2, "d": 3}
	g = newTestGroup(t, subOf, map[string]int32{"a": 1, "b": 1, "c": 1, "d": 1})
	g.join("r1", "r2")
	for id, topics := range g.rebalance() {
		if n := len(tasksOf(subOf, topics)); n != 2 {
			t.Errorf("%s holds %d of 4 single-task sub-topologies, want 2", id, n)
		}
	}
}

// A member joining takes tasks from the others and no other task moves; a
// member leaving gives up its tasks and no other task moves.
func TestTaskAssignorIsSticky(t *testing.T) {
	subOf := map[string]int32{"ma": 0, "mb": 0, "app-rep": 1}
	g := newTestGroup(t, subOf, map[string]int32{"ma": 12, "mb": 12, "app-rep": 12})
	g.join("r1")
	prev := g.rebalance()
	// Up to twelve members one by one, down to one, and back and forth.
	var steps []string
	for i := 2; i <= 13; i++ {
		steps = append(steps, fmt.Sprintf("+r%d", i))
	}
	for i := 13; i >= 2; i-- {
		steps = append(steps, fmt.Sprintf("-r%d", i))
	}
	steps = append(steps, "+r2", "+r3", "-r1", "+r1", "+r4", "-r2", "-r3", "+r5", "+r2", "-r4", "-r5", "-r1", "+r3")
	for _, step := range steps {
		id := step[1:]
		if step[0] == '+' {
			g.join(id)
		} else {
			g.leave(id)
		}
		out := g.rebalance()
		before, after := owners(subOf, prev), owners(subOf, out)
		gained := 0
		for task, now := range after {
			was, ok := before[task]
			switch {
			case !ok || was == now:
			case step[0] == '+' && now == id:
				gained++
			case step[0] == '-' && was == id:
			default:
				t.Errorf("%s: task %s moved from %s to %s", step, task, was, now)
			}
		}
		if step[0] == '+' && gained != len(tasksOf(subOf, out[id])) {
			t.Errorf("%s: it gained %d tasks from others, holds %d", step, gained, len(tasksOf(subOf, out[id])))
		}
		prev = out
	}
}

// owners maps each task ("sub_partition") to its member.
func owners(subOf map[string]int32, a map[string]map[string][]int32) map[string]string {
	o := map[string]string{}
	for id, topics := range a {
		for _, t := range tasksOf(subOf, topics) {
			o[t] = id
		}
	}
	return o
}

// When two members claim one task (one of them missed a generation), the
// claim of the later generation holds.
func TestTaskAssignorLaterGenerationWins(t *testing.T) {
	ms := []planMember{
		{id: "a", key: "a", topics: []string{"in"}, generation: 3, owned: []Task{{0, 0}, {0, 1}}},
		{id: "b", key: "b", topics: []string{"in"}, generation: 5, owned: []Task{{0, 1}}},
	}
	got := planTasks(ms, []taskGroup{{sub: 0, topics: []string{"in"}, partitions: []int32{0, 1}}})
	if want := map[Task]string{{0, 0}: "a", {0, 1}: "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// A topic grown before the others of its sub-topology: its new partitions
// wait (no task of one topic only); a member that does not read every
// topic of a sub-topology gets none of its tasks.
func TestTaskAssignorAssignsOnlyWholeTasks(t *testing.T) {
	subOf := map[string]int32{"ma": 0, "mb": 0, "solo": 1}
	g := newTestGroup(t, subOf, map[string]int32{"ma": 8, "mb": 6, "solo": 4})
	g.join("r1", "r2", "r3")
	g.subscribe["r3"] = []string{"solo"}
	out := g.rebalance()
	for id, topics := range out {
		for _, p := range topics["ma"] {
			if p >= 6 {
				t.Errorf("%s was assigned ma[%d], which mb lacks", id, p)
			}
		}
	}
	if len(out["r3"]["ma"]) > 0 || len(out["r3"]["mb"]) > 0 {
		t.Errorf("r3 reads only solo, got %v", out["r3"])
	}
	if n := len(out["r1"]["ma"]) + len(out["r2"]["ma"]); n != 6 {
		t.Errorf("%d tasks of ma and mb assigned, want 6", n)
	}
}

// A member whose subscription carries no user data of the assignor (or
// garbage) is planned under its member id with nothing owned.
func TestTaskAssignorForeignSubscription(t *testing.T) {
	a := newTaskAssignor("r1", map[string]int32{"in": 0}, time.Second)
	plan, err := a.Plan(map[string]sarama.ConsumerGroupMemberMetadata{
		"m1": {Topics: []string{"in"}, UserData: []byte{0, 9, 1}},
		"m2": {Topics: []string{"in"}},
	}, map[string][]int32{"in": {0, 1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan["m1"]["in"]) != 2 || len(plan["m2"]["in"]) != 2 {
		t.Errorf("plan %v, want 2 partitions each", plan)
	}
	ud, err := a.AssignmentData("m2", plan["m2"], 7)
	if err != nil {
		t.Fatal(err)
	}
	b := newTaskAssignor("", map[string]int32{"in": 0}, time.Second)
	b.OnAssignment(&sarama.ConsumerGroupMemberAssignment{Topics: plan["m2"], UserData: ud}, 7)
	as, ok := b.assignment(7)
	if !ok || len(as.Tasks) != 2 || len(as.Owners) != 4 || as.Owners[as.Tasks[0]] != "m2" {
		t.Errorf("assignment %+v (%v), want m2's 2 tasks and 4 owners", as, ok)
	}
	if _, ok := b.assignment(8); ok {
		t.Error("an assignment of generation 8 is known")
	}
	// Without user data the tasks come from the topics.
	b.OnAssignment(&sarama.ConsumerGroupMemberAssignment{Topics: map[string][]int32{"in": {3, 1}}}, 9)
	if as, _ := b.assignment(9); !reflect.DeepEqual(as.Tasks, []Task{{0, 1}, {0, 3}}) {
		t.Errorf("tasks %v, want 0_1 0_3", as.Tasks)
	}
}

func TestAssignorUserDataRoundTrip(t *testing.T) {
	s := subscription{Version: subscriptionVersion, InstanceID: "r1", Generation: 42, Owned: []Task{{0, 1}, {2, 5}}}
	got, err := decodeSubscription(s.encode())
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("subscription %+v, %v; want %+v", got, err, s)
	}
	// A later version appends fields: they are ignored.
	if got, err := decodeSubscription(append(s.encode(), 1, 2, 3)); err != nil || !reflect.DeepEqual(got.Owned, s.Owned) {
		t.Errorf("with trailing fields: %+v, %v", got, err)
	}
	a := assignmentData{Version: assignmentVersion, Tasks: []Task{{0, 1}}, Owners: map[string][]Task{"r1": {{0, 1}}, "r2": {{0, 0}, {1, 0}}}, Withheld: []Task{{1, 2}}}
	gotA, err := decodeAssignment(a.encode())
	if err != nil || !reflect.DeepEqual(gotA, a) {
		t.Errorf("assignment %+v, %v; want %+v", gotA, err, a)
	}
	for _, bad := range [][]byte{nil, {0, 0}, {0, 1, 0}, {0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0}} {
		if _, err := decodeSubscription(bad); err == nil {
			t.Errorf("subscription %v decoded", bad)
		}
		if _, err := decodeAssignment(bad); err == nil {
			t.Errorf("assignment %v decoded", bad)
		}
	}
}

// The decoders read what any member of the group sends.
func FuzzAssignorUserData(f *testing.F) {
	f.Add(subscription{InstanceID: "r1", Generation: 3, Owned: []Task{{0, 1}}}.encode())
	f.Add(assignmentData{Tasks: []Task{{0, 1}}, Owners: map[string][]Task{"r1": {{0, 1}}}}.encode())
	f.Add([]byte{0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := decodeSubscription(b); err == nil {
			again, err := decodeSubscription(s.encode())
			if err != nil || again.InstanceID != s.InstanceID || again.Generation != s.Generation || !slices.Equal(again.Owned, s.Owned) {
				t.Errorf("re-decoded %+v, %v; was %+v", again, err, s)
			}
		}
		_, _ = decodeAssignment(b)
	})
}

// A member joining a member that holds every task: in the first round the
// newcomer is assigned nothing (the tasks it will take are still held),
// the holder is assigned only what it keeps and revokes the rest, and the
// follow-up round gives the newcomer its share. A member leaving: its
// tasks are held by nobody, so one round assigns them.
func TestTaskAssignorCooperativeRounds(t *testing.T) {
	subOf := map[string]int32{"ma": 0, "mb": 0}
	g := newTestGroup(t, subOf, map[string]int32{"ma": 6, "mb": 6})
	g.join("r1")
	g.rebalance()
	g.join("r2")
	g.gen++ // the first round by hand
	first, _ := g.round()
	if n := len(tasksOf(subOf, first["r2"])); n != 0 {
		t.Errorf("round 1: r2 starts %d tasks r1 still holds", n)
	}
	if as, _ := g.members["r2"].assignment(g.gen); len(as.Withheld) != 3 {
		t.Errorf("round 1: r2 was told of %v withheld, want 3 tasks", as.Withheld)
	}
	if n := len(tasksOf(subOf, first["r1"])); n != 3 {
		t.Errorf("round 1: r1 keeps %d tasks, want 3", n)
	}
	out := g.rebalance()
	if g.rounds != 1 || len(tasksOf(subOf, out["r2"])) != 3 {
		t.Errorf("follow-up: %d rounds, r2 holds %v", g.rounds, out["r2"])
	}
	g.leave("r1")
	out = g.rebalance()
	if g.rounds != 1 || len(tasksOf(subOf, out["r2"])) != 6 {
		t.Errorf("leave: %d rounds, r2 holds %v", g.rounds, out["r2"])
	}
}
