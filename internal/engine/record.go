package engine

// Record handling: a batch's records through the graph, their outputs,
// rejections and staged state, and their lineage.

import (
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/statestore"
)

func (d *driver) process(b kafka.Batch) {
	d.e.commits.progress.received(b.Topic, b.Partition)
	if !d.open && !d.begin() {
		return
	}
	e := d.e
	d.batchNow = e.cfg.Now()
	defer func() { d.batchNow = time.Time{} }()
	d.noteStart(b)
	src := e.g.Source(b.Topic)
	sub := e.g.SubTopologyOf(b.Topic)
	task := taskName(sub, b.Partition)
	d.state.SetTask(statestore.Task{SubTopology: sub, Partition: b.Partition})
	if n := len(b.Records); n > 0 {
		e.m.setLag(b.Topic, b.Partition, max(b.HighWaterMark-b.Records[n-1].Offset-1, 0))
	}
	for i := range b.Records {
		r := &b.Records[i]
		if err := d.handle(src, r); err != nil {
			step := "state"
			if graph.IsUnavailable(err) {
				step = "codec" // a codec's registry out of reach
			}
			d.fail(step, err)
			return
		}
	}
	if err := d.streamTimers(&b, statestore.Task{SubTopology: sub, Partition: b.Partition}); err != nil {
		d.fail("state", err)
		return
	}
	if d.txn != nil {
		d.produceChanges()
	}
	if err := d.p.Err(); err != nil {
		e.m.commitFailures.add("produce", 1)
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
	d.bytes += b.Bytes
	d.pending.in[task] += len(b.Records)
}

// handle runs one record through the graph (taskstate.Executor): its
// outputs, rejections and state writes are buffered until the whole graph
// is done with it, and a record the executor rejects whole (undecodable,
// processing-error, an output or state change no topic accepts:
// too-large, timestamp-out-of-range) leaves no partial output and no state
// change, rather than failing every transaction that holds it. The error
// returned is a state failure or an outage of something a codec depends on
// (graph.IsUnavailable): the transaction cannot go on, and it is never the
// record's fault.
func (d *driver) handle(src *graph.Node, r *kafka.Record) error {
	d.out = d.out[:0]
	d.rejects = d.rejects[:0]
	d.inRecord = r
	d.lineage = ""
	d.lineageBytes = nil
	in := graph.Input{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Headers: r.Headers, Value: r.Value, Timestamp: r.Timestamp}
	o, err := d.exec.Execute(src, in, r.Key, d)
	if err != nil {
		return err
	}
	if o.Kind == taskstate.Rejected {
		d.rejectInput(o.Reason, o.Node, o.Err)
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
	if as := rej.Record; as != nil {
		d.reject(as.Key, as.Value, as.Headers, as.Timestamp, rej.Reason, rej.Node, rej)
		return nil
	}
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
			if r.Headers[i].Key == wire.HeaderSource && len(r.Headers[i].Value) <= maxLineage {
				d.lineageBytes = r.Headers[i].Value
				return d.lineageBytes
			}
		}
	}
	need := len(r.Topic) + 2 + 2*20
	if cap(d.lineageArena)-len(d.lineageArena) < need {
		d.lineageArena = make([]byte, 0, max(lineageChunk, need))
	}
	start := len(d.lineageArena)
	b := wire.AppendSource(d.lineageArena, r.Topic, r.Partition, r.Offset)
	d.lineageArena = b
	d.lineageBytes = b[start:len(b):len(b)]
	return d.lineageBytes
}

// maxLineage is the longest lineage: a topic name (249 characters at
// most), a partition and an offset. A longer lineage header on a record of
// a through topic was not written by a replica (others may write to that
// topic): the record is its own lineage, as it would be without one, so a
// foreign header cannot make its outputs or rejected copy too large.
const maxLineage = 249 + 1 + 10 + 1 + 19

// lineageChunk is the size of the arrays lineages are cut from: one
// allocation per some hundred records instead of one per record. A chunk
// is freed when no message refers to any lineage in it.
const lineageChunk = 16 << 10

// Emit implements graph.Emitter: it buffers one output with its lineage.
// The headers are the record's own (shared, never modified); the producer
// writes the lineage after them. An output no topic would accept is
// refused with a typed error (errTooLarge, errTimestamp) that names its
// rejection reason: the executor rejects the input record whole for it.
func (d *driver) Emit(topic string, key, value []byte, headers []graph.Header, ts time.Time) error {
	// Within one input batch the clock is read once (d.batchNow): the
	// bounds are a broker's minutes to days, a batch takes milliseconds,
	// and a clock read per output was a few percent of a copy's CPU.
	if err := d.policy.refuse(topic, key, value, headers, d.sourceBytes(), ts, d.batchNow); err != nil {
		return err
	}
	d.out = append(d.out, kafka.Message{
		Topic:     topic,
		Partition: wire.Partition(key, d.inRecord.Partition, d.policy.sinkParts[topic]),
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
	r := d.inRecord
	d.reject(r.Key, r.Value, r.Headers, r.Timestamp, reason, node, cause)
}

// reject buffers a record for the rejected-records topic: the input
// record, or one a node rejects in its place (graph.RejectedRecord), with
// the input record's lineage.
func (d *driver) reject(key, value []byte, headers []graph.Header, ts time.Time, reason, node string, cause error) {
	e := d.e
	r := d.inRecord
	hs := make([]graph.Header, 0, len(headers)+4)
	for _, h := range headers {
		switch h.Key {
		case wire.HeaderSource, wire.HeaderRejectReason, wire.HeaderRejectError, wire.HeaderRejectNode:
		default:
			hs = append(hs, h)
		}
	}
	own := len(hs)
	hs = append(hs,
		graph.Header{Key: wire.HeaderRejectReason, Value: []byte(reason)},
		graph.Header{Key: wire.HeaderSource, Value: []byte(d.source())},
		graph.Header{Key: wire.HeaderRejectError, Value: []byte(cause.Error())},
	)
	if node != "" {
		hs = append(hs, graph.Header{Key: wire.HeaderRejectNode, Value: []byte(node)})
	}
	m := kafka.Message{
		Topic:     d.policy.rejected,
		Partition: r.Partition % d.policy.rejectedParts,
		Key:       key,
		Value:     value,
		Headers:   hs,
		Timestamp: d.policy.rejectedStamp(ts),
	}
	d.policy.fitRejected(&m, own)
	d.out = append(d.out, m)
	d.rejects = append(d.rejects, reason)
	e.log.Debug("record rejected", "reason", reason, "node", node, "source", d.source(), "error", cause)
}
