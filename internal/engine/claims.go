package engine

// Claims that come and go within a session. The task group rebalances
// cooperatively (KIP-429): a session lasts across rebalances, the tasks
// that stay with the replica keep processing, a revoked task is committed
// and dropped, and an added task is checked and restored in its claim's
// goroutine, then joins the driver, while the driver goes on with the
// others.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// taskPrep is the preparation of a session's tasks: each task is checked
// and restored once, by the first of its claims to start; its other claims
// wait for it.
type taskPrep struct {
	mu    sync.Mutex
	tasks map[statestore.Task]*prepared
	// restore serializes restores: one changelog reader serves them all.
	restore sync.Mutex
}

// prepared is one task's preparation: done closes when it ended, with err.
type prepared struct {
	done chan struct{}
	err  error
}

// ready notes tasks prepared already (those Setup restored).
func (t *taskPrep) ready(tasks []statestore.Task) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tasks == nil {
		t.tasks = map[statestore.Task]*prepared{}
	}
	for _, task := range tasks {
		p := &prepared{done: make(chan struct{})}
		close(p.done)
		t.tasks[task] = p
	}
}

// start returns the task's preparation and whether the caller must run it.
func (t *taskPrep) start(task statestore.Task) (*prepared, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.tasks[task]; ok {
		return p, false
	}
	if t.tasks == nil {
		t.tasks = map[statestore.Task]*prepared{}
	}
	p := &prepared{done: make(chan struct{})}
	t.tasks[task] = p
	return p, true
}

// forget drops a task that left: if it comes back, it is prepared again.
func (t *taskPrep) forget(task statestore.Task) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.tasks, task)
}

// tasksOf lists the tasks of claims.
func (e *Engine) tasksOf(claims map[string][]int32) []statestore.Task {
	var out []statestore.Task
	for topic, parts := range claims {
		if e.g.Source(topic) == nil {
			continue
		}
		for _, p := range parts {
			t := statestore.Task{SubTopology: e.g.SubTopologyOf(topic), Partition: p}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// taskClaims is the part of claims that belongs to task.
func (e *Engine) taskClaims(claims map[string][]int32, task statestore.Task) map[string][]int32 {
	out := map[string][]int32{}
	for topic, parts := range claims {
		if e.g.Source(topic) != nil && e.g.SubTopologyOf(topic) == task.SubTopology && slices.Contains(parts, task.Partition) {
			out[topic] = []int32{task.Partition}
		}
	}
	return out
}

// Claimed makes the claim's partition the driver's: for a task the session
// did not start with, after checking and restoring it.
func (h *handler) Claimed(s kafka.Session, topic string, partition int32, claim uint64) error {
	if h.d == nil {
		return errors.New("engine: a claim without a session")
	}
	task := statestore.Task{SubTopology: h.e.g.SubTopologyOf(topic), Partition: partition}
	p, run := h.tasks.start(task)
	if run {
		p.err = h.prepare(s, task)
		close(p.done)
	}
	select {
	case <-p.done:
	case <-s.Context().Done():
		return nil
	}
	if errors.Is(p.err, kafka.ErrClaimRevoked) {
		h.tasks.forget(task)
		return p.err
	}
	if p.err != nil {
		return p.err
	}
	h.call(s, func(d *driver) { d.activate(topicPartition{topic, partition}, claim, run, task) })
	return nil
}

// Revoked commits what the driver processed and drops the partition: the
// group gives it to another member once this returns. A driver that does
// not get to it within half the rebalance timeout (stalled, or a commit
// that hangs) may still process and commit the partition later, in a
// generation the group still counts it in: the replica leaves the group
// then, so that its commits are refused (UNKNOWN_MEMBER_ID), as an evicted
// replica's are, and joins again.
func (h *handler) Revoked(s kafka.Session, topic string, partition int32, claim uint64) {
	e := h.e
	task := statestore.Task{SubTopology: e.g.SubTopologyOf(topic), Partition: partition}
	defer h.tasks.forget(task)
	done := make(chan struct{})
	go func() {
		select {
		case h.d.ctl <- func() { defer close(done); h.d.release(topicPartition{topic, partition}, claim, task) }:
		case <-h.done:
		}
	}()
	bound := time.NewTimer(e.cfg.Timeouts.Rebalance / 2)
	defer bound.Stop()
	select {
	case <-done:
	case <-h.done:
	case <-s.Context().Done():
	case <-bound.C:
		e.log.Error("a revoked partition was not released in time; leaving the group so that the replica's late commits are refused",
			"topic", topic, "partition", partition, "within", e.cfg.Timeouts.Rebalance/2)
		if err := e.conn.group.Leave(); err != nil {
			e.log.Warn("leave group", "error", err)
		}
		e.rewind()
	}
}

// call runs f on the driver goroutine and waits for it, or for the
// session to end.
func (h *handler) call(s kafka.Session, f func(d *driver)) {
	done := make(chan struct{})
	select {
	case h.d.ctl <- func() { defer close(done); f(h.d) }:
	case <-h.done:
		return
	case <-s.Context().Done():
		return
	}
	select {
	case <-done:
	case <-h.done:
	case <-s.Context().Done():
	}
}

// prepare checks and restores a task claimed within the session, as Setup
// does for the session's first tasks, while the driver processes the
// others. A check that fails stops the replica as it would at Setup; a
// restore that fails ends the session.
func (h *handler) prepare(s kafka.Session, task statestore.Task) error {
	e := h.e
	claims := s.Claims()
	mine := e.taskClaims(claims, task)
	e.log.Info("task claimed", "task", task.String(), "generation", s.Metadata().GenerationID, "claims", claimsString(mine))
	if err := e.checkTasksWhole(claims); err != nil {
		e.log.Error("refusing a session that holds part of a task; stopping", "error", err)
		e.stop(err)
		return err
	}
	if err := e.checkCopartitioned(); err != nil {
		e.log.Error("input topics are no longer co-partitioned; stopping", "error", err)
		e.stop(err)
		return err
	}
	if err := e.checkInternalOffsets(mine); err != nil {
		if errors.Is(err, kafka.ErrInternalOffsetOutOfRange) {
			e.stop(fmt.Errorf("engine: %w", err))
		} else {
			e.rewind()
		}
		return err
	}
	if len(e.restorer.stores) == 0 {
		return nil
	}
	for _, st := range e.restorer.storeTasks(mine) {
		if e.restorer.lacksPartition(st) {
			// Growing a changelog recreates the producer, which the driver
			// holds: the next session's Setup does it.
			e.log.Info("a claimed task's changelog lacks its partition; the session ends to add it", "task", task.String())
			e.rewind()
			return fmt.Errorf("%w: changelog partition missing", errSessionEnded)
		}
	}
	sts := e.restorer.storeTasks(mine)
	e.restorer.restoringTasks(sts, true)
	defer e.restorer.restoringTasks(sts, false)
	h.tasks.restore.Lock()
	defer h.tasks.restore.Unlock()
	ctx, stop := whileAssigned(s, mine)
	e.commits.progress.restoring(true, e.m.restored.value())
	err := e.restorer.restoreTasks(ctx, mine)
	e.commits.progress.restoring(false, e.m.restored.value())
	revoked := stop()
	if err != nil || revoked {
		if revoked && !ended(s) {
			e.log.Info("restore stopped: the task was revoked", "task", task.String(), "error", err)
			return kafka.ErrClaimRevoked
		}
		if ended(s) {
			e.log.Info("restore stopped: the session ended", "task", task.String(), "error", err)
			return fmt.Errorf("%w: %w", errSessionEnded, err)
		}
		e.log.Warn("restore failed; the session ends and the replica joins again", "task", task.String(), "error", err)
		e.rewind()
		return err
	}
	return nil
}

// whileAssigned returns a context that ends with s or once the group's
// assignment no longer gives s the task's topic-partitions (mine), and a
// stop function that reports whether the task was revoked (by then, or in
// the assignment in force when it is called). It compares topic-partitions,
// not the assignment's tasks: those are numbered by the leader's topology,
// which may number sub-topologies otherwise.
func whileAssigned(s kafka.Session, mine map[string][]int32) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(s.Context())
	lost := func() bool {
		a, ok := s.Assignment()
		if !ok {
			return false
		}
		for topic, ps := range mine {
			for _, p := range ps {
				if !slices.Contains(a.Topics[topic], p) {
					return true
				}
			}
		}
		return false
	}
	var revoked atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if lost() {
				revoked.Store(true)
				cancel()
				return
			}
		}
	}()
	return ctx, func() bool {
		cancel()
		<-done
		return revoked.Load() || lost()
	}
}

// activate makes a claim's partition the driver's; added says its task
// was just prepared (restored) within the session.
func (d *driver) activate(tp topicPartition, claim uint64, added bool, task statestore.Task) {
	e := d.e
	d.tasks.add(tp, claim)
	if added && e.restorer.db != nil {
		d.tasks.own(e.restorer.storeTasks(map[string][]int32{tp.topic: {tp.partition}}))
		e.restorer.sizes.own(d.tasks.keep.owned)
		d.st.state.ForgetTask(task) // recovered from the restored state when needed
	}
	d.claimsChanged()
}

// release commits the open transaction (every task's: one transaction
// holds them all) and drops a revoked partition: its offsets, its claim,
// and once none of its task's partitions is left, the task's state in
// memory and ownership.
func (d *driver) release(tp topicPartition, claim uint64, task statestore.Task) {
	e := d.e
	if !d.tasks.has(tp, claim) {
		return
	}
	if d.iv.open && !d.failed {
		d.commit()
	}
	left := d.tasks.remove(tp, task)
	d.fence.forget(tp)
	e.m.dropLag(tp.topic, tp.partition)
	if !left {
		d.st.state.ForgetTask(task)
		gone := d.tasks.disown(task)
		if len(gone) > 0 && !d.failed {
			// Owned until now: its last transaction committed.
			if err := e.restorer.db.MarkOwned(e.cfg.Now(), gone...); err != nil {
				e.log.Warn("cannot record the task as owned", "task", task.String(), "error", err)
			}
		}
		e.restorer.sizes.own(d.tasks.keep.owned)
		e.log.Info("task revoked", "task", task.String(), "committed", !d.failed)
	}
	d.claimsChanged()
}

// claimsChanged reports the driver's claims: to the status, the stall
// watch and the metrics, with the generation, counted when it is new.
func (d *driver) claimsChanged() {
	e := d.e
	claims := d.tasks.claims()
	md := d.s.Metadata()
	if d.tasks.generation(md.GenerationID) {
		e.m.rebalances.Inc()
		e.log.Info("generation changed", "generation", md.GenerationID, "member", md.MemberID, "claims", claimsString(claims))
	}
	n := 0
	for _, ps := range claims {
		n += len(ps)
	}
	e.m.assignedTasks.Set(float64(n))
	e.commits.progress.assign(claims)
	e.m.ownTasks(e.g, claims)
	e.commits.live.session(md, claims)
}
