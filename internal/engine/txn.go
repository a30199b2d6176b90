package engine

// The transaction driver: begin, commit with its deadline and retries,
// the tally counted at commit, and failure: notify, recover the producer
// (failure.go), rewind.

import (
	"context"
	"errors"
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
	release, step, err := d.commitKafka()
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

// commitKafka commits the transaction's outputs and offsets as the
// delivery guarantee says (committer.go); a transaction's committed
// offsets are positions the fence knows from then on.
func (d *driver) commitKafka() (release func(), step string, err error) {
	c := d.e.committer()
	if !d.e.cfg.ExactlyOnce {
		return c.offsets(d.p, d.s, d.iv.offsets)
	}
	proof := func(ctx context.Context) (map[string]map[int32]int64, error) {
		return d.fence.proof(ctx, d.e.g, d.tasks.claims(), func(ctx context.Context, missing map[string][]int32) (map[string]map[int32]int64, error) {
			return d.e.conn.admin.Positions(ctx, d.e.cfg.AppID, missing)
		})
	}
	release, step, err = c.transaction(d.p, d.s, d.iv.offsets, proof)
	if err == nil {
		d.fence.committed(d.iv.offsets)
	}
	return release, step, err
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
		m.recordsIn.add(task, int64(n))
	}
	for topic, n := range t.out {
		if topic == rejected {
			continue
		}
		m.recordsOut.add(topic, int64(n))
	}
	for reason, n := range t.rejected {
		m.rejected.add(reason, int64(n))
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
