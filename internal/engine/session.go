package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/statestore"
)

// handler receives one group session at a time.
type handler struct {
	e      *Engine
	joined time.Time
	d      *driver
	done   chan struct{}
}

func (h *handler) Setup(s kafka.Session) (chan<- kafka.Batch, error) {
	e := h.e
	e.c.sessions.Add(1)
	e.m.rebalances.Inc()
	e.m.rebalanceTime.Observe(time.Since(h.joined).Seconds())
	n := 0
	for _, ps := range s.Claims() {
		n += len(ps)
	}
	e.m.assignedTasks.Set(float64(n))
	e.progress.assign(s.Claims())
	md := s.Metadata()
	e.log.Info("session started", "generation", md.GenerationID, "member", md.MemberID, "claims", claimsString(s.Claims()))
	if err := e.checkInternalOffsets(s.Claims()); err != nil {
		return nil, err
	}
	var keep keeper
	if len(e.stores) > 0 {
		if err := e.growChangelogsFor(s.Context(), s.Claims()); err != nil {
			e.log.Warn("changelog partitions missing; the session ends and the replica joins again", "error", err)
			return nil, err
		}
		// Local state catches up with the changelogs before any input of
		// the session is processed.
		e.progress.restoring(true, e.c.restored.Load())
		err := e.restoreTasks(s.Context(), s.Claims())
		e.progress.restoring(false, e.c.restored.Load())
		if err != nil {
			e.log.Warn("restore failed; the session ends and the replica joins again", "error", err)
			return nil, err
		}
		owned := e.storeTasks(s.Claims())
		if err := e.dropUnowned(owned); err != nil {
			e.log.Warn("state cleanup failed", "error", err)
		}
		keep = keeper{owned: owned, marked: e.cfg.Now(), cleaned: e.cfg.Now()}
	}
	batches := make(chan kafka.Batch, 64)
	h.d = &driver{e: e, s: s, p: e.producer, keep: keep, batches: batches, finish: make(chan struct{}), offsets: map[string]map[int32]int64{},
		starts: map[string]map[int32]int64{}, internal: map[string]bool{}, pending: newTally()}
	for _, t := range e.g.LinkTopics() {
		h.d.internal[t] = true
	}
	h.d.state = h.d.newTaskState()
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		h.d.run()
	}()
	e.ready.Store(true)
	return batches, nil
}

// Cleanup runs in the revoke window: every claim stopped delivering. The
// driver commits what it processed (or aborts) before the member rejoins.
func (h *handler) Cleanup(s kafka.Session) error {
	h.e.ready.Store(false)
	if h.d == nil {
		return nil // Setup failed
	}
	close(h.d.finish)
	<-h.done
	h.e.producer = h.d.p // nil when the driver had to drop it
	h.e.log.Debug("session ended", "generation", s.Metadata().GenerationID)
	return nil
}

// driver is the one goroutine that drives the producer during a session:
// it processes batches, opens and commits transactions, and rewinds on
// failure.
type driver struct {
	e       *Engine
	s       kafka.Session
	p       *kafka.Producer
	batches chan kafka.Batch
	finish  chan struct{}

	open         bool // a transaction (or an at-least-once interval) has records
	failed       bool // the session is being rewound; process nothing more
	offsets      map[string]map[int32]int64
	starts       map[string]map[int32]int64 // offset of each partition's first record in the transaction
	records      int
	started      time.Time
	out          []kafka.Message // outputs and rejections of the record being processed
	rejects      []string        // reasons of the record's rejections
	pending      tally           // what the open transaction will count when it commits
	lineage      string
	lineageBytes []byte
	gctx         graph.Context
	input        graph.Input
	inRecord     *kafka.Record
	tooLarge     error // an output or state change of the record no topic accepts

	internal map[string]bool // repartition topics

	// State (topologies with stores).
	txn         *statestore.Txn
	keep        keeper
	state       *taskstate.State
	changesSent int
	seen        map[changeKey]struct{} // scratch of produceChanges
	send        []bool                 // scratch of produceChanges

	deadline *time.Timer
}

func (d *driver) run() {
	// The deadline of the open transaction: one commit interval after it
	// began (armed by begin, so a transaction never runs longer).
	d.deadline = time.NewTimer(time.Hour)
	d.deadline.Stop()
	defer d.deadline.Stop()
	for {
		select {
		case b := <-d.batches:
			if d.failed {
				continue
			}
			d.process(b)
			if d.open && d.records >= d.e.cfg.CommitRecords {
				d.commit()
			}
		case <-d.deadline.C:
			if d.open && !d.failed {
				d.commit()
			}
		case <-d.finish:
			if d.e.crashed.Load() {
				return
			}
			if d.open && !d.failed {
				d.commit()
			}
			return
		}
	}
}

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
	d.deadline.Reset(d.e.cfg.CommitInterval)
	return true
}

func (d *driver) process(b kafka.Batch) {
	d.e.progress.received(b.Topic, b.Partition)
	if !d.open && !d.begin() {
		return
	}
	e := d.e
	d.noteStart(b)
	src := e.g.Source(b.Topic)
	sub := e.g.SubTopologyOf(b.Topic)
	task := taskName(sub, b.Partition)
	d.state.SetTask(statestore.Task{SubTopology: sub, Partition: b.Partition})
	for i := range b.Records {
		r := &b.Records[i]
		if err := d.handle(src, r); err != nil {
			d.fail("state", err)
			return
		}
	}
	if d.txn != nil {
		d.produceChanges()
	}
	if err := d.p.Err(); err != nil {
		e.m.commitFailures.WithLabelValues("produce").Inc()
		d.fail("produce", err)
		return
	}
	parts := d.offsets[b.Topic]
	if parts == nil {
		parts = map[int32]int64{}
		d.offsets[b.Topic] = parts
	}
	parts[b.Partition] = b.Records[len(b.Records)-1].Offset + 1
	d.records += len(b.Records)
	d.pending.in[task] += len(b.Records)
}

// handle runs one record through the graph. Its outputs, rejections and
// state writes are buffered until the whole graph is done with it. A gate
// that rejects one record in flight rolls back what that record's own path
// buffered (graph.Context.Forward) and its siblings flow on; any other
// failure drops everything the input record buffered and rejects it whole
// (processing-error), so it leaves no partial output and no state change.
// The error returned is a state failure (the transaction cannot go on),
// never the record's.
func (d *driver) handle(src *graph.Node, r *kafka.Record) error {
	d.out = d.out[:0]
	d.rejects = d.rejects[:0]
	d.inRecord = r
	d.lineage = ""
	d.lineageBytes = nil
	k, v, err := src.Decode(r.Key, r.Value)
	if err != nil {
		d.rejectInput(ReasonUndecodable, "", err)
		return d.stage()
	}
	d.input = graph.Input{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Headers: r.Headers, Value: r.Value, Timestamp: r.Timestamp}
	var st graph.State
	if d.txn != nil {
		st = d.state
	}
	err = d.gctx.Run(src, &d.input, graph.Record{Key: k, Value: v, Headers: r.Headers, Timestamp: r.Timestamp}, d, st)
	if tl := d.takeTooLarge(); tl != nil {
		// An output or state change no topic accepts: the input record is
		// rejected whole, without its outputs and state writes, rather than
		// failing every transaction that holds it.
		d.Rollback(graph.Mark{})
		d.rejectInput(ReasonTooLarge, "", tl)
		return d.stage()
	}
	if err != nil {
		d.Rollback(graph.Mark{})
		if rej, ok := errors.AsType[*graph.Rejection](err); ok {
			// A graph whose source does not split records: the rejection
			// reached the top, so the whole input is the rejected record.
			d.rejectInput(rej.Reason, rej.Node, rej)
		} else {
			d.rejectInput(ReasonProcessingError, "", err)
		}
	}
	return d.stage()
}

// stage moves what the record buffered into the transaction: its state
// writes into the Txn, its outputs and rejections to the producer. They
// are counted when the transaction commits.
func (d *driver) stage() error {
	if d.txn != nil {
		if err := d.state.Commit(); err != nil {
			return err
		}
	}
	for i := range d.out {
		d.p.Send(&d.out[i])
		d.pending.out[d.out[i].Topic]++
	}
	for _, reason := range d.rejects {
		d.pending.rejected[reason]++
	}
	return nil
}

// Mark implements graph.Emitter.
func (d *driver) Mark() graph.Mark {
	return graph.Mark{Outputs: len(d.out), Rejections: len(d.rejects), State: d.state.Mark()}
}

// Rollback implements graph.Emitter: it drops what the record buffered
// after m.
func (d *driver) Rollback(m graph.Mark) {
	clear(d.out[m.Outputs:])
	d.out = d.out[:m.Outputs]
	d.rejects = d.rejects[:m.Rejections]
	d.state.Rollback(m.State)
}

// Reject implements graph.Emitter: a gate rejected one record in flight.
func (d *driver) Reject(rej *graph.Rejection) error {
	d.rejectInput(rej.Reason, rej.Node, rej)
	return nil
}

// source is the lineage of the record being processed: its own
// coordinates, or, for a record read back from a repartition topic, the
// original input record's that it carries.
func (d *driver) source() string {
	if d.lineage == "" {
		d.lineage = string(d.sourceBytes())
	}
	return d.lineage
}

// sourceBytes is source() as bytes, made once per input record.
func (d *driver) sourceBytes() []byte {
	if d.lineageBytes != nil {
		return d.lineageBytes
	}
	r := d.inRecord
	if d.internal[r.Topic] {
		for i := len(r.Headers) - 1; i >= 0; i-- {
			if r.Headers[i].Key == HeaderSource {
				d.lineageBytes = r.Headers[i].Value
				return d.lineageBytes
			}
		}
	}
	b := make([]byte, 0, len(r.Topic)+24)
	b = append(b, r.Topic...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.Partition), 10)
	b = append(b, '/')
	d.lineageBytes = strconv.AppendInt(b, r.Offset, 10)
	return d.lineageBytes
}

// Emit implements graph.Emitter: it buffers one output with its lineage.
// The headers are the record's own (shared, never modified); the producer
// writes the lineage after them.
func (d *driver) Emit(topic string, key, value []byte, headers []graph.Header, ts time.Time) error {
	if err := d.checkSize(topic, key, value, headers, d.sourceBytes()); err != nil {
		return err
	}
	d.out = append(d.out, kafka.Message{
		Topic:     topic,
		Partition: kafka.Partition(key, d.inRecord.Partition, d.e.sinkParts[topic]),
		Key:       key,
		Value:     value,
		Headers:   headers,
		Source:    d.sourceBytes(),
		Timestamp: ts,
	})
	return nil
}

// rejectInput buffers the input record for the rejected-records topic
// with the reason, the node that rejected it (empty for the runtime's own
// rejections) and the cause.
func (d *driver) rejectInput(reason, node string, cause error) {
	e := d.e
	r := d.inRecord
	hs := make([]graph.Header, 0, len(r.Headers)+4)
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderSource, HeaderRejectReason, HeaderRejectError, HeaderRejectNode:
		default:
			hs = append(hs, h)
		}
	}
	own := len(hs)
	hs = append(hs,
		graph.Header{Key: HeaderRejectReason, Value: []byte(reason)},
		graph.Header{Key: HeaderSource, Value: []byte(d.source())},
		graph.Header{Key: HeaderRejectError, Value: []byte(cause.Error())},
	)
	if node != "" {
		hs = append(hs, graph.Header{Key: HeaderRejectNode, Value: []byte(node)})
	}
	m := kafka.Message{
		Topic:     e.rejected,
		Partition: r.Partition % e.rejectedParts,
		Key:       r.Key,
		Value:     r.Value,
		Headers:   hs,
		Timestamp: r.Timestamp,
	}
	d.fitRejected(&m, own)
	d.out = append(d.out, m)
	d.rejects = append(d.rejects, reason)
	e.log.Debug("record rejected", "reason", reason, "node", node, "source", d.source(), "error", cause)
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
		// One deadline for the whole commit: a coordinator that does not
		// answer must not hold the replica (and its shutdown) for longer.
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeouts.Commit)
		defer cancel()
		if err := d.p.AddOffsets(ctx, d.offsets, d.s.Metadata()); err != nil {
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
		if err := d.p.CommitOffsets(ctx, d.offsets, d.s.Metadata()); err != nil {
			d.fail("commit offsets", err)
			return
		}
	}
	e.repeats.committed(d.offsets)
	e.c.committed.Add(1)
	e.progress.committed(d.offsets)
	e.purge.committed(d.offsets)
	e.m.transactions.WithLabelValues("committed").Inc()
	d.pending.count(e)
	e.m.commitLatency.Observe(time.Since(start).Seconds())
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
	d.records = 0
	clear(d.offsets)
	clear(d.starts)
	d.pending.clear()
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
		e.c.in.Add(int64(n))
		e.m.recordsIn.WithLabelValues(task).Add(float64(n))
	}
	for topic, n := range t.out {
		if topic == e.rejected {
			continue
		}
		e.c.out.Add(int64(n))
		e.m.recordsOut.WithLabelValues(topic).Add(float64(n))
	}
	for reason, n := range t.rejected {
		e.c.rejected.Add(int64(n))
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
		e.c.timeouts.Add(1)
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
	e.c.aborted.Add(1)
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
	d.e.c.recreated.Add(1)
	d.e.m.recreations.Inc()
}
