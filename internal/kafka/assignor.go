package kafka

// The task assignor: a sarama BalanceStrategy that hands out tasks, not
// topic-partitions. A sub-topology that reads several topics (a merge, a
// join, a repartition topic beside a source) is correct only when one
// member processes partition p of all of them; Kafka's assignors balance
// each topic on its own and split such tasks across members.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// TaskAssignorName is the group protocol name of the task assignor. Every
// member of a group must offer it: a member that offers only another
// assignor (an earlier release) cannot join a group of members that offer
// only this one, and the reverse. The name changed when the assignor became
// cooperative ("onceflow-tasks" was eager): a leader of the earlier release
// would hand a task to a member while another still holds it.
const TaskAssignorName = "onceflow-cooperative-tasks"

// BalancedAssignorName is the group protocol name of the task assignor
// used eagerly with every topic a sub-topology of its own (NewBalancedGroup):
// each topic's partitions are balanced across the members on their own.
const BalancedAssignorName = "onceflow-balanced"

// taskAssignor is the balance strategy of one member. As leader it plans
// the group's assignment; as a member it remembers what it was assigned,
// and says so in its next subscription, so that tasks stay where they are
// across rebalances. It takes part in the cooperative protocol (KIP-429):
// a member keeps the tasks that stay with it through a rebalance, and a
// task that moves is first released by its owner, then assigned in the
// follow-up rebalance (see withhold).
type taskAssignor struct {
	instanceID string
	subOf      map[string]int32 // source topic → sub-topology
	// name and protocol: TaskAssignorName and cooperative, or
	// BalancedAssignorName and eager (see newBalancedAssignor).
	name     string
	protocol sarama.RebalanceProtocol

	mu struct {
		sync.Mutex
		last Assignment // received in the latest generation
		// planned is the leader's latest plan, member id → its
		// assignment user data, handed out by AssignmentData.
		planned map[string]assignmentData
		// joined is open while the member joins a generation: from its
		// JoinGroup (SubscriptionUserData) to its assignment
		// (OnAssignment); nil when no join is in progress.
		joined chan struct{}
		// commits counts the offset commits in flight (see hold); idle,
		// when a join waits for them, closes once none is.
		commits int
		idle    chan struct{}
		// followUp ends the member's session so that it joins again at
		// once (see OnAssignment); set by Group.Consume.
		followUp func()
	}
	// holdBound bounds how long a join waits for commits in flight.
	holdBound time.Duration
}

func newTaskAssignor(instanceID string, subOf map[string]int32, holdBound time.Duration) *taskAssignor {
	a := &taskAssignor{instanceID: instanceID, subOf: maps.Clone(subOf), holdBound: holdBound,
		name: TaskAssignorName, protocol: sarama.RebalanceProtocolCooperative}
	a.mu.last.Generation = -1
	return a
}

// newBalancedAssignor returns the task assignor of a group whose topics
// are not read together: each topic is a sub-topology of its own (numbered
// in the order of the names), so each topic's partitions are balanced
// across the members, sticky across rebalances. Its rebalances are eager:
// every member releases everything before it joins, so no partition is
// ever held by two members and nothing is withheld.
func newBalancedAssignor(instanceID string) *taskAssignor {
	a := &taskAssignor{instanceID: instanceID, name: BalancedAssignorName, protocol: sarama.RebalanceProtocolEager}
	a.mu.last.Generation = -1
	return a
}

var (
	_ sarama.SubscriptionUserDataBalanceStrategy = (*taskAssignor)(nil)
	_ sarama.OnAssignmentBalanceStrategy         = (*taskAssignor)(nil)
	_ sarama.RebalanceProtocolBalanceStrategy    = (*taskAssignor)(nil)
)

func (a *taskAssignor) Name() string { return a.name }

// SupportedProtocols makes the group cooperative (sarama keeps one session
// across rebalances, revoking and adding claims within it), or eager for
// a balanced assignor.
func (a *taskAssignor) SupportedProtocols() []sarama.RebalanceProtocol {
	return []sarama.RebalanceProtocol{a.protocol}
}

// SubscriptionUserData tells the leader who this member is and which
// tasks it owned, with the generation they were assigned in. sarama calls
// it as the member joins: a join is in progress until OnAssignment, no
// commit starts meanwhile (hold), and the JoinGroup waits for the commits
// in flight, at most holdBound: the join's completion moves the group to
// the next generation, and a commit that arrives after it, naming the
// generation before, is refused.
func (a *taskAssignor) SubscriptionUserData([]string) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.joined == nil {
		a.mu.joined = make(chan struct{})
	}
	if a.mu.commits > 0 {
		if a.mu.idle == nil {
			a.mu.idle = make(chan struct{})
		}
		idle := a.mu.idle
		a.mu.Unlock()
		t := time.NewTimer(a.holdBound)
		select {
		case <-idle:
		case <-t.C:
		}
		t.Stop()
		a.mu.Lock()
	}
	return subscription{InstanceID: a.instanceID, Generation: a.mu.last.Generation, Owned: a.mu.last.Tasks}.encode(), nil
}

// hold waits while the member joins a generation, until current says the
// session knows the generation last assigned, then counts an offset commit
// in flight until release is called: the member's next JoinGroup waits
// for it. When ctx or the session's sctx ends first, the commit goes on
// unheld.
func (a *taskAssignor) hold(ctx, sctx context.Context, current func(assigned int32) bool) (release func()) {
	for {
		a.mu.Lock()
		joined, gen := a.mu.joined, a.mu.last.Generation
		if joined == nil && current(gen) {
			a.mu.commits++
			a.mu.Unlock()
			return a.release
		}
		a.mu.Unlock()
		var tick <-chan time.Time
		if joined == nil {
			// sarama stores the new generation in the session just after
			// OnAssignment.
			tick = time.After(time.Millisecond)
		}
		select {
		case <-joined:
		case <-tick:
		case <-ctx.Done():
			return func() {}
		case <-sctx.Done():
			return func() {}
		}
	}
}

// release ends a commit counted by hold.
func (a *taskAssignor) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mu.commits--
	if a.mu.commits == 0 && a.mu.idle != nil {
		close(a.mu.idle)
		a.mu.idle = nil
	}
}

// joinEnded ends the join in progress, if any (its assignment came, or
// its session ended).
func (a *taskAssignor) joinEnded() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.joined != nil {
		close(a.mu.joined)
		a.mu.joined = nil
	}
}

// OnAssignment records what this member was assigned.
func (a *taskAssignor) OnAssignment(as *sarama.ConsumerGroupMemberAssignment, generation int32) {
	got := Assignment{Generation: generation, Owners: map[Task]string{}, Topics: map[string][]int32{}}
	for topic, ps := range as.Topics {
		got.Topics[topic] = slices.Clone(ps)
	}
	if data, err := decodeAssignment(as.UserData); err == nil {
		got.Tasks = data.Tasks
		got.Withheld = data.Withheld
		for owner, ts := range data.Owners {
			for _, t := range ts {
				got.Owners[t] = owner
			}
		}
	} else {
		// Not planned by this assignor: the tasks are what the topics say.
		got.Tasks = a.tasksOf(as.Topics)
	}
	a.mu.Lock()
	a.mu.last = got
	followUp := a.mu.followUp
	a.mu.Unlock()
	a.joinEnded()
	if len(got.Withheld) > 0 && len(got.Tasks) == 0 && followUp != nil {
		// A member that holds nothing and waits for tasks others still
		// hold: the holders join again as soon as they released them, but
		// it would only learn of that rebalance at its next heartbeat, and
		// the follow-up generation waits for it. Its session (which holds
		// nothing) ends instead, and it joins again at once.
		followUp()
	}
}

// setFollowUp sets what OnAssignment calls to make the member join again
// at once (nil: nothing).
func (a *taskAssignor) setFollowUp(f func()) {
	a.mu.Lock()
	a.mu.followUp = f
	a.mu.Unlock()
}

// assignment returns what this member was assigned in generation, and
// whether it knows it.
func (a *taskAssignor) assignment(generation int32) (Assignment, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.last.Generation != generation {
		return Assignment{}, false
	}
	out := a.mu.last
	out.Tasks = slices.Clone(out.Tasks)
	out.Owners = maps.Clone(out.Owners)
	out.Topics = maps.Clone(out.Topics)
	for topic, ps := range out.Topics {
		out.Topics[topic] = slices.Clone(ps)
	}
	return out, true
}

// holds reports whether the latest assignment gives this member topic's
// partition (true while it knows of none).
func (a *taskAssignor) holds(topic string, partition int32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.last.Topics == nil {
		return true
	}
	return slices.Contains(a.mu.last.Topics[topic], partition)
}

// tasksOf lists the tasks of topic-partitions, sorted, without repeats.
func (a *taskAssignor) tasksOf(topics map[string][]int32) []Task {
	var ts []Task
	for topic, ps := range topics {
		sub, ok := a.subOf[topic]
		if !ok {
			continue
		}
		for _, p := range ps {
			ts = append(ts, Task{SubTopology: sub, Partition: p})
		}
	}
	slices.SortFunc(ts, compareTasks)
	return slices.Compact(ts)
}

// AssignmentData is the user data of memberID's assignment in the plan
// made last.
func (a *taskAssignor) AssignmentData(memberID string, _ map[string][]int32, _ int32) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, ok := a.mu.planned[memberID]
	if !ok {
		return nil, fmt.Errorf("kafka: no assignment planned for member %q", memberID)
	}
	return data.encode(), nil
}

// Plan assigns every task to one member (see planTasks).
func (a *taskAssignor) Plan(members map[string]sarama.ConsumerGroupMemberMetadata, topics map[string][]int32) (sarama.BalanceStrategyPlan, error) {
	ms := make([]planMember, 0, len(members))
	for id, md := range members {
		m := planMember{id: id, key: id, topics: md.Topics, generation: -1}
		if s, err := decodeSubscription(md.UserData); err == nil {
			if s.InstanceID != "" {
				m.key = s.InstanceID
			}
			m.generation, m.owned = s.Generation, s.Owned
		}
		ms = append(ms, m)
	}
	groups := taskGroups(a.subOf, topics)
	owners := planTasks(ms, groups)
	withheld := withhold(owners, members, groups)

	plan := sarama.BalanceStrategyPlan{}
	byKey := map[string][]Task{}
	planned := map[string]assignmentData{}
	for _, m := range ms {
		plan[m.id] = map[string][]int32{} // every member gets user data, idle ones too
		byKey[m.key] = nil
	}
	keyOf := map[string]string{}
	for _, m := range ms {
		keyOf[m.id] = m.key
	}
	for _, g := range groups {
		for _, p := range g.partitions {
			t := Task{SubTopology: g.sub, Partition: p}
			id, ok := owners[t]
			if !ok {
				continue
			}
			for _, topic := range g.topics {
				plan.Add(id, topic, p)
			}
			byKey[keyOf[id]] = append(byKey[keyOf[id]], t)
		}
	}
	for _, m := range ms {
		planned[m.id] = assignmentData{Tasks: byKey[m.key], Owners: byKey, Withheld: withheld[m.id]}
	}
	a.mu.Lock()
	a.mu.planned = planned
	a.mu.Unlock()
	return plan, nil
}

// withhold takes out of owners, for this generation, every task planned
// for a member while another member still holds one of its partitions
// (sarama reports what each member holds in OwnedPartitions, the claims of
// its live session). The holder is not assigned it either, so it revokes
// it (committing first) and sarama joins again at once; the follow-up plan
// finds the task held by nobody and assigns it. So no task is held by two
// members at once, and every round hands out whole tasks only.
// It returns the tasks withheld, by the member they were planned for.
func withhold(owners map[Task]string, members map[string]sarama.ConsumerGroupMemberMetadata, groups []taskGroup) map[string][]Task {
	subOf := map[string]int32{}
	for _, g := range groups {
		for _, t := range g.topics {
			subOf[t] = g.sub
		}
	}
	holders := map[Task][]string{}
	for id, md := range members {
		for _, op := range md.OwnedPartitions {
			if op == nil {
				continue
			}
			sub, ok := subOf[op.Topic]
			if !ok {
				continue
			}
			for _, p := range op.Partitions {
				t := Task{SubTopology: sub, Partition: p}
				if !slices.Contains(holders[t], id) {
					holders[t] = append(holders[t], id)
				}
			}
		}
	}
	out := map[string][]Task{}
	for t, id := range owners {
		if slices.ContainsFunc(holders[t], func(h string) bool { return h != id }) {
			delete(owners, t)
			out[id] = append(out[id], t)
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, compareTasks)
	}
	return out
}

// taskGroup is one sub-topology as the leader sees it: its topics, and
// the partitions that are tasks (those every one of its topics has).
type taskGroup struct {
	sub        int32
	topics     []string
	partitions []int32
}

// taskGroups groups the subscribed topics by sub-topology. A topic the
// leader's topology does not name (a member runs another topology) is a
// sub-topology of its own, numbered after the known ones. The partitions
// of a group are those all its topics have: a topic grown before the
// others of its sub-topology waits for them (its new partitions are not
// assigned) rather than splitting a task.
func taskGroups(subOf map[string]int32, topics map[string][]int32) []taskGroup {
	bySub := map[int32][]string{}
	var unknown []string
	next := int32(0)
	for _, s := range subOf {
		next = max(next, s+1)
	}
	for topic := range topics {
		if s, ok := subOf[topic]; ok {
			bySub[s] = append(bySub[s], topic)
		} else {
			unknown = append(unknown, topic)
		}
	}
	slices.Sort(unknown)
	for _, topic := range unknown {
		bySub[next] = []string{topic}
		next++
	}
	var gs []taskGroup
	for _, s := range slices.Sorted(maps.Keys(bySub)) {
		g := taskGroup{sub: s, topics: bySub[s]}
		slices.Sort(g.topics)
		for i, topic := range g.topics {
			ps := slices.Clone(topics[topic])
			slices.Sort(ps)
			if i == 0 {
				g.partitions = ps
				continue
			}
			g.partitions = slices.DeleteFunc(g.partitions, func(p int32) bool { _, ok := slices.BinarySearch(ps, p); return !ok })
		}
		gs = append(gs, g)
	}
	return gs
}

// planMember is one member as the leader plans.
type planMember struct {
	id         string // member id
	key        string // instance id, or member id: stable, and the order of ties
	topics     []string
	generation int32  // of owned
	owned      []Task // as the member says
}

// planTasks assigns each task of groups to one member, sub-topology by
// sub-topology: within one, members hold task counts that differ by at
// most one; the extra tasks go first to members that held them already,
// then to members with the fewest tasks over all sub-topologies so far. A
// task stays with its previous owner when that owner is in the group, can
// read all its topics and is within its count. When two members claim
// one task, the later generation's claim holds. It returns task → member
// id; a task no member can read is left out.
func planTasks(members []planMember, groups []taskGroup) map[Task]string {
	slices.SortFunc(members, func(a, b planMember) int { return cmp.Compare(a.key, b.key) })
	prev := map[Task]int{} // task → index of the member holding it
	for i, m := range members {
		for _, t := range m.owned {
			j, ok := prev[t]
			if !ok || m.generation > members[j].generation {
				prev[t] = i
			}
		}
	}
	load := make([]int, len(members))
	owners := map[Task]string{}
	for _, g := range groups {
		var eligible []int
		for i, m := range members {
			if subscribesAll(m.topics, g.topics) {
				eligible = append(eligible, i)
			}
		}
		if len(eligible) == 0 || len(g.partitions) == 0 {
			continue
		}
		base, extra := len(g.partitions)/len(eligible), len(g.partitions)%len(eligible)
		kept := map[int][]int32{}
		for _, p := range g.partitions {
			if i, ok := prev[Task{g.sub, p}]; ok && slices.Contains(eligible, i) {
				kept[i] = append(kept[i], p)
			}
		}
		// Who may hold base+1: those who held that many, then the least
		// loaded.
		order := slices.Clone(eligible)
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Or(
				cmp.Compare(min(len(kept[b]), base+1), min(len(kept[a]), base+1)),
				cmp.Compare(load[a], load[b]))
		})
		quota := map[int]int{}
		for n, i := range order {
			quota[i] = base
			if n < extra {
				quota[i]++
			}
		}
		count := map[int]int{}
		var free []int32
		assigned := map[int32]bool{}
		for _, i := range eligible {
			keep := kept[i][:min(len(kept[i]), quota[i])]
			for _, p := range keep {
				owners[Task{g.sub, p}] = members[i].id
				assigned[p] = true
			}
			count[i] = len(keep)
		}
		for _, p := range g.partitions {
			if !assigned[p] {
				free = append(free, p)
			}
		}
		for _, p := range free {
			best := -1
			for _, i := range eligible {
				if count[i] >= quota[i] {
					continue
				}
				if best < 0 || count[i] < count[best] || count[i] == count[best] && load[i] < load[best] {
					best = i
				}
			}
			owners[Task{g.sub, p}] = members[best].id
			count[best]++
		}
		for _, i := range eligible {
			load[i] += count[i]
		}
	}
	return owners
}

// subscribesAll reports whether subscribed holds every topic of want.
func subscribesAll(subscribed, want []string) bool {
	for _, t := range want {
		if !slices.Contains(subscribed, t) {
			return false
		}
	}
	return true
}
