package engine

// The record emitter: what the record in flight (a consumed record or a
// punctuation) emits and rejects, buffered with its lineage until the
// graph is done with it; the driver then stages it into the transaction.

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/statestore"
)

// emitter implements taskstate.Emitter for the driver: the outputs and
// rejections of one record at a time, refused by the output policy when no
// topic would accept them, and the record's lineage.
type emitter struct {
	policy   *outputPolicy
	internal map[string]bool // repartition topics: their records carry their lineage
	state    *taskstate.State
	log      hclog.Logger

	out          []kafka.Message // outputs and rejections of the record being processed
	rejects      []string        // reasons of the record's rejections
	in           *kafka.Record   // the record being processed
	punct        kafka.Record    // stands for the input record of a punctuation
	lineage      string
	lineageBytes []byte
	arena        []byte    // free room of the current lineage chunk
	now          time.Time // the clock when the batch being processed began; zero outside one
}

// newEmitter returns the emitter of a session; its state is set once the
// state is built (the state reads the emitter's lineage).
func newEmitter(policy *outputPolicy, g *graph.Graph, log hclog.Logger) *emitter {
	em := &emitter{policy: policy, internal: map[string]bool{}, log: log}
	for _, t := range g.LinkTopics() {
		em.internal[t] = true
	}
	return em
}

// record starts a consumed record: nothing buffered, its own lineage.
func (em *emitter) record(r *kafka.Record) {
	em.out = em.out[:0]
	em.rejects = em.rejects[:0]
	em.in = r
	em.lineage = ""
	em.lineageBytes = nil
}

// punctuation starts a punctuation of task at at: nothing buffered, the
// punctuator's lineage.
func (em *emitter) punctuation(node string, task statestore.Task, at time.Time) {
	em.out = em.out[:0]
	em.rejects = em.rejects[:0]
	em.punct = kafka.Record{Partition: task.Partition, Offset: -1, Timestamp: at}
	em.in = &em.punct
	em.lineage = wire.PunctuatorSource(node, task.SubTopology, task.Partition)
	em.lineageBytes = []byte(em.lineage)
}

// Mark implements graph.Emitter.
func (em *emitter) Mark() graph.Mark {
	return graph.Mark{Outputs: len(em.out), Rejections: len(em.rejects), State: em.state.Mark()}
}

// Rollback implements graph.Emitter: it drops what the record buffered
// after m.
func (em *emitter) Rollback(m graph.Mark) {
	clear(em.out[m.Outputs:])
	em.out = em.out[:m.Outputs]
	em.rejects = em.rejects[:m.Rejections]
	em.state.Rollback(m.State)
}

// Reject implements graph.Emitter: a gate rejected one record in flight.
func (em *emitter) Reject(rej *graph.Rejection) error {
	if as := rej.Record; as != nil {
		em.reject(as.Key, as.Value, as.Headers, as.Timestamp, rej.Reason, rej.Node, rej)
		return nil
	}
	em.rejectInput(rej.Reason, rej.Node, rej)
	return nil
}

// Lineage implements graph.Lineager: the outbox records of a punctuation
// take their default idempotency key from it (a record's take its
// coordinates).
func (em *emitter) Lineage() string { return em.source() }

// source is the lineage of the record being processed: its own
// coordinates, or, for a record read back from a repartition topic, the
// original input record's that it carries.
func (em *emitter) source() string {
	if em.lineage == "" {
		em.lineage = string(em.sourceBytes())
	}
	return em.lineage
}

// sourceBytes is source() as bytes, made once per input record.
func (em *emitter) sourceBytes() []byte {
	if em.lineageBytes != nil {
		return em.lineageBytes
	}
	r := em.in
	if em.internal[r.Topic] {
		for i := len(r.Headers) - 1; i >= 0; i-- {
			if r.Headers[i].Key == wire.HeaderSource && len(r.Headers[i].Value) <= maxLineage {
				em.lineageBytes = r.Headers[i].Value
				return em.lineageBytes
			}
		}
	}
	need := len(r.Topic) + 2 + 2*20
	if cap(em.arena)-len(em.arena) < need {
		em.arena = make([]byte, 0, max(lineageChunk, need))
	}
	start := len(em.arena)
	b := wire.AppendSource(em.arena, r.Topic, r.Partition, r.Offset)
	em.arena = b
	em.lineageBytes = b[start:len(b):len(b)]
	return em.lineageBytes
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
func (em *emitter) Emit(topic string, key, value []byte, headers []graph.Header, ts time.Time) error {
	// Within one input batch the clock is read once (em.now): the bounds
	// are a broker's minutes to days, a batch takes milliseconds, and a
	// clock read per output was a few percent of a copy's CPU.
	if err := em.policy.refuse(topic, key, value, headers, em.sourceBytes(), ts, em.now); err != nil {
		return err
	}
	em.out = append(em.out, kafka.Message{
		Topic:     topic,
		Partition: wire.Partition(key, em.in.Partition, em.policy.sinkParts[topic]),
		Key:       key,
		Value:     value,
		Headers:   headers,
		Source:    em.sourceBytes(),
		Timestamp: ts,
	})
	return nil
}

// rejectInput buffers the input record for the rejected-records topic
// with the reason, the node that rejected it (empty for the runtime's own
// rejections) and the cause.
func (em *emitter) rejectInput(reason, node string, cause error) {
	r := em.in
	em.reject(r.Key, r.Value, r.Headers, r.Timestamp, reason, node, cause)
}

// reject buffers a record for the rejected-records topic: the input
// record, or one a node rejects in its place (graph.RejectedRecord), with
// the input record's lineage.
func (em *emitter) reject(key, value []byte, headers []graph.Header, ts time.Time, reason, node string, cause error) {
	r := em.in
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
		graph.Header{Key: wire.HeaderSource, Value: []byte(em.source())},
		graph.Header{Key: wire.HeaderRejectError, Value: []byte(cause.Error())},
	)
	if node != "" {
		hs = append(hs, graph.Header{Key: wire.HeaderRejectNode, Value: []byte(node)})
	}
	m := kafka.Message{
		Topic:     em.policy.rejected,
		Partition: r.Partition % em.policy.rejectedParts,
		Key:       key,
		Value:     value,
		Headers:   hs,
		Timestamp: em.policy.rejectedStamp(ts),
	}
	em.policy.fitRejected(&m, own)
	em.out = append(em.out, m)
	em.rejects = append(em.rejects, reason)
	em.log.Debug("record rejected", "reason", reason, "node", node, "source", em.source(), "error", cause)
}
