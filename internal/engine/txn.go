package engine

// The transaction driver: begin, commit with its deadline and retries,
// the tally counted at commit, and failure: notify, recover the producer
// (failure.go), rewind.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
)

// begin opens a transaction for the first record of an interval.
func (d *driver) begin() bool {
	if h := d.e.cfg.Hooks.BeforeBegin; h != nil {
		h()
	}
	if d.e.cfg.ExactlyOnce {
		if err := d.p.Begin(); err != nil {
			d.fail("begin", err)
			return false
		}
	}
	d.st.begin(d.p)
	d.iv.begin(d.e.commits.size.interval)
	return true
}

// commit ends the interval: offsets and outputs commit together, then
// the session's observers learn of it and local state is applied.
func (d *driver) commit() {
	start := time.Now()
	began := d.e.cfg.Now()
	if d.st.open() {
		if err := d.st.expireDedup(); err != nil {
			d.fail("expire", err)
			return
		}
		d.st.sendChanges(d.p)
	}
	commit := d.commitOffsets
	if d.e.cfg.ExactlyOnce {
		commit = d.commitTransaction
	}
	release, step, err := commit()
	defer release()
	if err != nil {
		d.fail(step, err)
		return
	}
	if d.s.Metadata().GenerationID != d.tasks.gen {
		d.claimsChanged()
	}
	d.notifyCommitted(commitInfo{offsets: d.iv.offsets, tally: d.iv.pending, records: d.iv.records,
		took: time.Since(start), age: d.iv.age()})
	if d.st.open() && !d.apply(began) {
		return
	}
	d.reset()
}

// commitTransaction adds the offsets to the open transaction and commits
// it, within one commit deadline. The member's next join is held off
// until release is called (after the commit's observers and apply); on
// failure, step names what failed.
func (d *driver) commitTransaction() (release func(), step string, err error) {
	e := d.e
	release = func() {}
	if err := d.p.Err(); err != nil {
		e.m.commitFailures.WithLabelValues("produce").Inc()
		return release, "produce", err
	}
	if h := e.cfg.Hooks.BeforeAddOffsets; h != nil {
		h()
	}
	release = d.hold()
	// One deadline for the whole commit: a coordinator that does not
	// answer must not hold the replica (and its shutdown) for longer.
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeouts.Commit)
	defer cancel()
	// Every transaction proves the generation (fence.go): one opened by
	// a wall-clock punctuator, which consumed nothing, with its tasks'
	// positions unchanged.
	offsets := d.iv.offsets
	if len(offsets) == 0 {
		if offsets, err = d.proof(ctx); err != nil {
			return release, "positions", err
		}
	}
	if err := d.p.AddOffsets(ctx, offsets, d.s.Metadata()); err != nil {
		return release, "add offsets", err
	}
	if h := e.cfg.Hooks.BeforeCommit; h != nil {
		h()
	}
	if err := d.commitTxn(ctx); err != nil {
		return release, "commit", err
	}
	d.fence.committed(d.iv.offsets)
	return release, "", nil
}

// commitOffsets ends an at-least-once interval: the outputs are flushed,
// then the offsets committed, within one commit deadline.
func (d *driver) commitOffsets() (release func(), step string, err error) {
	e := d.e
	release = func() {}
	if h := e.cfg.Hooks.BeforeAddOffsets; h != nil {
		h()
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeouts.Commit)
	defer cancel()
	if err := d.p.Flush(ctx); err != nil {
		return release, "flush", err
	}
	hold := d.hold()
	err = d.p.CommitOffsets(ctx, d.iv.offsets, d.s.Metadata())
	hold()
	if err != nil {
		return release, "commit offsets", err
	}
	return release, "", nil
}

// apply writes a committed transaction's state to the local store; false
// when it did not, and the session processes nothing more (a test's
// BeforeApply hook) or rewinds to restore the tail from the changelog.
func (d *driver) apply(began time.Time) bool {
	e := d.e
	if h := e.cfg.Hooks.BeforeApply; h != nil && !h() {
		d.discard()
		d.failed = true // as if crashed: process nothing more
		return false
	}
	if err := d.st.apply(d.p); err != nil {
		// Kafka has the transaction; local state does not. The next
		// session restores the tail from the changelog. The producer
		// is created again first: its InitProducerId waits until the
		// commit markers are written, as a new owner's restore does.
		e.log.Warn("state apply failed after commit; recreating the producer and rewinding to restore", "error", err)
		d.discard()
		d.failed = true
		d.dropProducer()
		e.rewind()
		return false
	}
	d.tasks.keep.committed(e.restorer, began)
	return true
}

// discard drops the local state transaction and the interval.
func (d *driver) discard() {
	d.st.discard()
	d.reset()
}

// hold waits, before offsets join a transaction, while the member joins
// a new generation, at most half the commit timeout (so the transaction's
// age stays below its timeout), and holds the member's next join off until
// the release it returns is called (kafka.Session.Hold).
func (d *driver) hold() (release func()) {
	ctx, cancel := context.WithTimeout(context.Background(), d.e.cfg.Timeouts.Commit/2)
	defer cancel()
	return d.s.Hold(ctx)
}

// errUnknownOutcome marks an EndTxn whose outcome could not be learned.
var errUnknownOutcome = errors.New("engine: transaction outcome unknown")

// commitTxn commits, retrying a call that failed without making the
// transaction abortable or the producer fatal (the outcome is unknown),
// until ctx ends.
func (d *driver) commitTxn(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = d.p.Commit(ctx); err == nil {
			return nil
		}
		if errors.Is(err, kafka.ErrCallTimeout) {
			return err
		}
		switch d.p.State() {
		case kafka.TxnAbortable, kafka.TxnFatal, kafka.TxnReady:
			return err
		}
		d.e.log.Warn("commit failed with unknown outcome; retrying", "attempt", attempt+1, "error", err)
	}
	return fmt.Errorf("%w: %v", errUnknownOutcome, err)
}

func (d *driver) reset() {
	d.iv.reset()
	d.fence.reset()
}

// tally counts what the open transaction consumed, produced and rejected;
// it reaches the counters and metrics only when the transaction commits,
// so a record processed again after an abort is counted once.
type tally struct {
	in       map[string]int // by task
	out      map[string]int // by topic (rejected records included)
	rejected map[string]int // by reason
}

func newTally() tally {
	return tally{in: map[string]int{}, out: map[string]int{}, rejected: map[string]int{}}
}

func (t tally) count(m *metrics, rejected string) {
	for task, n := range t.in {
		m.recordsIn.WithLabelValues(task).Add(float64(n))
	}
	for topic, n := range t.out {
		if topic == rejected {
			continue
		}
		m.recordsOut.WithLabelValues(topic).Add(float64(n))
	}
	for reason, n := range t.rejected {
		m.rejected.WithLabelValues(reason).Add(float64(n))
	}
	t.clear()
}

func (t tally) clear() {
	clear(t.in)
	clear(t.out)
	clear(t.rejected)
}

// fail ends a failed transaction: its observers learn of it, the producer
// recovers as the failure policy decides (failure.go), the state
// transaction is discarded, and the session rewinds, or the replica stops
// when the same input keeps failing (repeats).
func (d *driver) fail(step string, err error) {
	e := d.e
	state := d.aborted(step, err)
	rec := recoveryFor(e.cfg.ExactlyOnce, state, err)
	if rec == recoverAbort {
		rec = d.abort()
	}
	d.st.discard()
	if rec == recoverDrop {
		d.dropProducer()
	} else {
		d.p.Reset()
	}
	stop := e.commits.repeats.failed(d.iv.starts, step, err)
	d.reset()
	d.failed = true
	if stop != nil {
		e.stop(stop)
		return
	}
	e.rewind()
}

// aborted tells the observers and the log of a failed transaction, and
// returns the producer's transaction state.
func (d *driver) aborted(step string, err error) kafka.TxnState {
	e := d.e
	a := abortInfo{step: step, err: err, state: kafka.TxnReady, timedOut: errors.Is(err, kafka.ErrCallTimeout), age: d.iv.age()}
	if e.cfg.ExactlyOnce && !a.timedOut {
		a.state = d.p.State() // an abandoned producer is not asked: sarama's call still holds it
	}
	d.notifyAborted(a)
	if a.timedOut {
		e.log.Warn("transaction step timed out; dropping the producer and rewinding", "step", step, "deadline", e.cfg.Timeouts.Commit, "error", err)
	} else {
		e.log.Warn("transaction failed; rewinding", "step", step, "state", a.state, "error", err)
	}
	return a.state
}

// abort aborts a failed transaction within the commit deadline: the
// producer is reset after it, or dropped when the abort failed.
func (d *driver) abort() recovery {
	ctx, cancel := context.WithTimeout(context.Background(), d.e.cfg.Timeouts.Commit)
	defer cancel()
	if err := d.p.Abort(ctx); err != nil {
		d.e.log.Warn("abort failed; recreating producer", "error", err)
		return recoverDrop
	}
	return recoverReset
}

// dropProducer closes the producer; the engine creates a new one with the
// same transactional id before the next session.
func (d *driver) dropProducer() {
	d.e.closeProducer(d.p)
	d.p = nil
	d.e.m.recreations.Inc()
}
