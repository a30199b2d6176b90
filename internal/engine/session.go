package engine

// The group session: Setup restores and starts the driver, Cleanup
// waits for it; the driver goroutine runs one transaction after another.
// Rebalances are cooperative: the session lasts across them, and claims
// come and go within it (claims.go).

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
)

// handler receives one group session at a time.
type handler struct {
	e      *Engine
	joined time.Time
	d      *driver
	done   chan struct{}
	tasks  taskPrep // the session's tasks and their preparation (claims.go)
}

func (h *handler) Setup(s kafka.Session) (chan<- kafka.Batch, error) {
	e := h.e
	e.m.rebalances.Inc()
	e.m.rebalanceTime.Observe(time.Since(h.joined).Seconds())
	n := 0
	for _, ps := range s.Claims() {
		n += len(ps)
	}
	e.m.assignedTasks.Set(float64(n))
	e.commits.progress.assign(s.Claims())
	e.m.ownTasks(e.g, s.Claims())
	md := s.Metadata()
	e.commits.live.session(md, s.Claims())
	e.commits.live.bind(s)
	e.commits.live.sample(e.commits.progress.now(), e.m.committed.value())
	e.log.Info("session started", "generation", md.GenerationID, "member", md.MemberID, "claims", claimsString(s.Claims()))
	if err := e.checkTasksWhole(s.Claims()); err != nil {
		e.log.Error("refusing a session that holds part of a task; stopping", "error", err)
		return nil, err
	}
	if err := e.checkCopartitioned(); err != nil {
		e.log.Error("input topics are no longer co-partitioned; stopping", "error", err)
		return nil, err
	}
	if err := e.checkInternalOffsets(s.Claims()); err != nil {
		return nil, err
	}
	var keep keeper
	if len(e.restorer.stores) > 0 {
		if err := e.growChangelogsFor(s.Context(), s.Claims()); err != nil {
			if ended(s) {
				e.log.Info("session ended while changelog partitions were prepared", "error", err)
				return nil, fmt.Errorf("%w: %w", errSessionEnded, err)
			}
			e.log.Warn("changelog partitions missing; the session ends and the replica joins again", "error", err)
			return nil, err
		}
		// Local state catches up with the changelogs before any input of
		// the session is processed. sarama cannot join a rebalance while
		// Setup runs: one that starts ends the restore and the session, so
		// that the replica joins the new generation at once instead of
		// being evicted when the rebalance times out.
		rctx, rebalancing := e.untilRebalance(s)
		e.commits.progress.restoring(true, e.m.restored.value())
		err := e.restorer.restoreTasks(rctx, s.Claims())
		e.commits.progress.restoring(false, e.m.restored.value())
		rebalanced := rebalancing()
		if err != nil {
			if ended(s) || rebalanced {
				// Routine: a rebalance or a stop. The next owner restores
				// from what this one applied.
				e.log.Info("restore stopped: the session ended", "error", err)
				return nil, fmt.Errorf("%w: %w", errSessionEnded, err)
			}
			e.log.Warn("restore failed; the session ends and the replica joins again", "error", err)
			return nil, err
		}
		owned := e.restorer.storeTasks(s.Claims())
		if err := e.restorer.dropUnowned(owned); err != nil {
			e.log.Warn("state cleanup failed", "error", err)
		}
		keep = keeper{owned: owned, marked: e.cfg.Now(), cleaned: e.cfg.Now()}
		e.restorer.sizes.own(owned)
		e.restorer.measureState()
	}
	h.tasks.ready(e.tasksOf(s.Claims()))
	batches := make(chan kafka.Batch, 64)
	h.d = &driver{e: e, s: s, p: e.conn.producer, tasks: newTaskSet(e.g, md.GenerationID, keep), batches: batches, finish: make(chan struct{}), iv: newInterval(),
		ctl:       make(chan func()),
		observers: e.commitObservers(), timers: newTimerSchedule(e.g), em: newEmitter(&e.output, e.g, e.log)}
	h.d.st = newStateTxn(e, h.d.em)
	h.d.em.state = h.d.st.state
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		h.d.run()
	}()
	e.life.ready.Store(true)
	return batches, nil
}

// untilRebalance returns a context that ends with s or when the group
// starts a rebalance (a heartbeat says so), and a stop function that
// reports whether the rebalance ended it.
func (e *Engine) untilRebalance(s kafka.Session) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(s.Context())
	var rebalanced atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(e.cfg.Timeouts.Heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := s.Heartbeat(ctx); kafka.IsMembershipLost(err) {
				e.log.Info("the group rebalances; the session's restore ends", "error", err)
				rebalanced.Store(true)
				cancel()
				return
			}
		}
	}()
	return ctx, func() bool {
		cancel()
		<-done
		return rebalanced.Load()
	}
}

// errSessionEnded marks a Setup cut short because its session ended (a
// rebalance, a stop): not a failure.
var errSessionEnded = errors.New("engine: the session ended during its setup")

// ended reports whether a Setup step failed because s ended: once the
// session's context is done, whatever the step returns (a cancellation in
// any wrapping) is moot, and the next session starts afresh.
func ended(s kafka.Session) bool { return s.Context().Err() != nil }

// Cleanup runs in the revoke window: every claim stopped delivering. The
// driver commits what it processed (or aborts) before the member rejoins.
func (h *handler) Cleanup(s kafka.Session) error {
	h.e.life.ready.Store(false)
	h.e.commits.live.session(s.Metadata(), nil)
	h.e.commits.live.bind(nil)
	if h.d == nil {
		return nil // Setup failed
	}
	close(h.d.finish)
	<-h.done
	h.e.conn.producer = h.d.p // nil when the driver had to drop it
	for topic, parts := range s.Claims() {
		for _, p := range parts {
			h.e.m.dropLag(topic, p)
		}
	}
	for tp := range h.d.tasks.active {
		h.e.m.dropLag(tp.topic, tp.partition)
	}
	h.e.log.Debug("session ended", "generation", s.Metadata().GenerationID)
	return nil
}

// driver is the one goroutine that drives the producer during a session:
// it processes batches, opens and commits transactions, and rewinds on
// failure.
type driver struct {
	e       *Engine
	s       kafka.Session
	p       *kafka.Producer // nil once dropped, until the next session
	batches chan kafka.Batch
	finish  chan struct{}
	ctl     chan func() // work of the claim goroutines, run by the driver (claims.go)
	failed  bool        // the session is being rewound; process nothing more

	// The machines it drives, each with one job and a narrow way in.
	tasks     *taskSet         // the partitions, claims and store tasks processed (taskset.go)
	iv        *interval        // the open transaction's bookkeeping (interval.go)
	em        *emitter         // what the record in flight emits and rejects (emitter.go)
	st        *stateTxn        // the task state and its Pebble transaction (statetxn.go)
	timers    *timerSchedule   // when punctuators are due (schedule.go)
	fence     fence            // the generation proof of transactions without input (fence.go)
	observers []commitObserver // learn of each commit and abort (observers.go)
}

func (d *driver) run() {
	// The deadline of the open transaction: one commit interval after it
	// began (armed by begin, so a transaction never runs longer).
	defer d.iv.deadline.Stop()
	var wallC <-chan time.Time
	if every := d.timers.wallEvery(); every > 0 {
		wall := time.NewTicker(every)
		defer wall.Stop()
		wallC = wall.C
	}
	for {
		select {
		case <-wallC:
			if !d.failed {
				d.wallTimers()
			}
		case f := <-d.ctl:
			f()
		case b := <-d.batches:
			if d.failed || !d.tasks.has(topicPartition{b.Topic, b.Partition}, b.Claim) {
				continue
			}
			d.process(b)
			if d.iv.full(d.e.commits.size.records) {
				d.commit()
			}
		case <-d.iv.deadline.C:
			if d.iv.open && !d.failed {
				d.commit()
			}
		case <-d.finish:
			if d.e.life.crashed.Load() {
				return
			}
			if d.iv.open && !d.failed {
				d.commit()
			}
			return
		}
	}
}
