package engine

// Record handling: a batch's records through the graph, and what they
// buffered (emitter.go) staged into the transaction.

import (
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/statestore"
)

func (d *driver) process(b kafka.Batch) {
	d.e.commits.progress.received(b.Topic, b.Partition)
	if !d.iv.open && !d.begin() {
		return
	}
	e := d.e
	d.em.now = e.cfg.Now()
	defer func() { d.em.now = time.Time{} }()
	d.iv.starting(b)
	src := e.g.Source(b.Topic)
	sub := e.g.SubTopologyOf(b.Topic)
	task := taskName(sub, b.Partition)
	d.st.state.SetTask(statestore.Task{SubTopology: sub, Partition: b.Partition})
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
	if d.st.open() {
		d.st.sendChunk(d.p)
	}
	if err := d.p.Err(); err != nil {
		e.m.commitFailures.add("produce", 1)
		d.fail("produce", err)
		return
	}
	d.iv.consumed(b, task)
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
	d.em.record(r)
	in := graph.Input{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Headers: r.Headers, Value: r.Value, Timestamp: r.Timestamp}
	o, err := d.st.exec.Execute(src, in, r.Key, d.em)
	if err != nil {
		return err
	}
	if o.Kind == taskstate.Rejected {
		d.em.rejectInput(o.Reason, o.Node, o.Err)
	}
	return d.stage()
}

// stage moves what the record buffered into the transaction: its state
// writes into the Txn, its outputs and rejections to the producer. They
// are counted when the transaction commits.
func (d *driver) stage() error {
	if err := d.st.stage(); err != nil {
		return err
	}
	for i := range d.em.out {
		d.p.Send(&d.em.out[i])
		d.iv.pending.out[d.em.out[i].Topic]++
	}
	for _, reason := range d.em.rejects {
		d.iv.pending.rejected[reason]++
	}
	return nil
}
