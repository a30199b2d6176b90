package engine

// The transaction driver: begin, commit with its deadline and retries,
// the tally counted at commit, and failure: abort, rewind, drop the producer.

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
	if d.e.db != nil {
		d.txn = d.e.db.Begin()
		d.state.Begin(d.txn)
		d.changesSent = 0
		d.p.ResetTracked()
	}
	d.open = true
	d.started = time.Now()
	d.deadline.Reset(d.e.size.interval)
	return true
}

// commit ends the interval: offsets and outputs commit together.
func (d *driver) commit() {
	e := d.e
	start := time.Now()
	began := e.cfg.Now()
	if d.txn != nil {
		if err := d.expireDedup(); err != nil {
			d.fail("expire", err)
			return
		}
		d.produceChanges()
	}
	if e.cfg.ExactlyOnce {
		if err := d.p.Err(); err != nil {
			e.m.commitFailures.WithLabelValues("produce").Inc()
			d.fail("produce", err)
			return
		}
		if h := e.cfg.Hooks.BeforeAddOffsets; h != nil {
			h()
		}
		defer d.hold()()
		// One deadline for the whole commit: a coordinator that does not
		// answer must not hold the replica (and its shutdown) for longer.
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeouts.Commit)
		defer cancel()
		// Every transaction proves the generation (fence.go): one opened by
		// a wall-clock punctuator, which consumed nothing, with its tasks'
		// positions unchanged.
		offsets := d.offsets
		if len(offsets) == 0 {
			var err error
			if offsets, err = d.proof(ctx); err != nil {
				d.fail("positions", err)
				return
			}
		}
		if err := d.p.AddOffsets(ctx, offsets, d.s.Metadata()); err != nil {
			d.fail("add offsets", err)
			return
		}
		if h := e.cfg.Hooks.BeforeCommit; h != nil {
			h()
		}
		if err := d.commitTxn(ctx); err != nil {
			d.fail("commit", err)
			return
		}
		d.fence.committed(d.offsets)
	} else {
		if h := e.cfg.Hooks.BeforeAddOffsets; h != nil {
			h()
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeouts.Commit)
		defer cancel()
		if err := d.p.Flush(ctx); err != nil {
			d.fail("flush", err)
			return
		}
		release := d.hold()
		err := d.p.CommitOffsets(ctx, d.offsets, d.s.Metadata())
		release()
		if err != nil {
			d.fail("commit offsets", err)
			return
		}
	}
	if d.s.Metadata().GenerationID != d.gen {
		d.claimsChanged()
	}
	e.repeats.committed(d.offsets)
	e.progress.committed(d.offsets)
	e.purge.committed(d.offsets)
	e.m.transactions.WithLabelValues("committed").Inc()
	d.pending.count(e)
	took := time.Since(start)
	e.m.commitLatency.Observe(took.Seconds())
	e.live.committed(took)
	e.checkCommitLatency(took)
	if e.cfg.ExactlyOnce {
		age := time.Since(d.started)
		e.sizeTransactions(e.commitPressure(took, age), took, age)
	}
	e.m.recordsPerTxn.Observe(float64(d.records))
	if d.txn != nil {
		apply := true
		if h := e.cfg.Hooks.BeforeApply; h != nil {
			apply = h()
		}
		if !apply {
			d.txn.Discard()
			d.txn = nil
			d.state.Begin(nil)
			d.reset()
			d.failed = true // as if crashed: process nothing more
			return
		}
		if err := d.applyState(); err != nil {
			// Kafka has the transaction; local state does not. The next
			// session restores the tail from the changelog. The producer
			// is created again first: its InitProducerId waits until the
			// commit markers are written, as a new owner's restore does.
			e.log.Warn("state apply failed after commit; recreating the producer and rewinding to restore", "error", err)
			d.txn.Discard()
			d.txn = nil
			d.state.Begin(nil)
			d.reset()
			d.failed = true
			d.dropProducer()
			e.rewind()
			return
		}
		d.txn = nil
		d.state.Begin(nil)
		d.keep.committed(e, began)
	}
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
	d.deadline.Stop()
	d.open = false
	d.records, d.bytes = 0, 0
	clear(d.offsets)
	clear(d.starts)
	d.pending.clear()
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

func (t tally) count(e *Engine) {
	for task, n := range t.in {
		e.m.recordsIn.WithLabelValues(task).Add(float64(n))
	}
	for topic, n := range t.out {
		if topic == e.rejected {
			continue
		}
		e.m.recordsOut.WithLabelValues(topic).Add(float64(n))
	}
	for reason, n := range t.rejected {
		e.m.rejected.WithLabelValues(reason).Add(float64(n))
	}
	t.clear()
}

func (t tally) clear() {
	clear(t.in)
	clear(t.out)
	clear(t.rejected)
}

// fail aborts the open transaction (or, when that is impossible, drops the
// producer so it is created again with the same transactional id, which
// aborts the transaction on the broker) and rewinds the session.
func (d *driver) fail(step string, err error) {
	e := d.e
	e.progress.aborted()
	timedOut := errors.Is(err, kafka.ErrCallTimeout)
	state := kafka.TxnReady
	if e.cfg.ExactlyOnce && !timedOut {
		// An abandoned producer is not asked: sarama's call still holds it.
		state = d.p.State()
	}
	if timedOut {
		e.sizeTransactions(1, e.cfg.Timeouts.Commit, time.Since(d.started))
		e.m.commitTimeouts.Inc()
		e.log.Warn("transaction step timed out; dropping the producer and rewinding", "step", step, "deadline", e.cfg.Timeouts.Commit, "error", err)
	} else {
		e.log.Warn("transaction failed; rewinding", "step", step, "state", state, "error", err)
	}
	e.m.commitFailures.WithLabelValues(state.String()).Inc()
	drop := errors.Is(err, errUnknownOutcome) || kafka.IsFenced(err) || timedOut
	if e.cfg.ExactlyOnce && !drop {
		switch state {
		case kafka.TxnOpen, kafka.TxnAbortable:
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeouts.Commit)
			aerr := d.p.Abort(ctx)
			cancel()
			if aerr != nil {
				e.log.Warn("abort failed; recreating producer", "error", aerr)
				drop = true
			}
		case kafka.TxnFatal, kafka.TxnUnknown:
			drop = true
		}
	}
	if !e.cfg.ExactlyOnce && !errors.Is(err, context.DeadlineExceeded) && !timedOut {
		// An at-least-once producer with failed sends is reset by the rewind
		// alone: the records are consumed again and sent again.
		drop = false
	}
	if d.txn != nil {
		d.txn.Discard()
		d.txn = nil
		d.state.Begin(nil)
	}
	if drop {
		d.dropProducer()
	} else {
		d.p.Reset()
	}
	e.m.transactions.WithLabelValues("aborted").Inc()
	stop := e.repeats.failed(d.starts, step, err)
	d.reset()
	d.failed = true
	if stop != nil {
		e.stop(stop)
		return
	}
	e.rewind()
}

// dropProducer closes the producer; the engine creates a new one with the
// same transactional id before the next session.
func (d *driver) dropProducer() {
	d.e.closeProducer(d.p)
	d.p = nil
	d.e.m.recreations.Inc()
}
