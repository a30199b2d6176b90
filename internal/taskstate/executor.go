package taskstate

// The record executor: the per-record rule (decode, run, roll back, reject)
// that the engine and the topology test driver both call, so a record is
// rejected for the same reason, by the same node, under test as in a
// replica.

import (
	"errors"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/statestore"
)

// Kind is what became of a record or a punctuation.
type Kind int

const (
	// Ran: it ran through the graph. Its outputs, its gates' rejections
	// and its state writes are buffered in the Emitter and the State.
	Ran Kind = iota
	// Rejected: the input record is to be rejected whole, with the
	// outcome's Reason, Node and Err. Everything it buffered was rolled
	// back.
	Rejected
	// Failed: a punctuation failed with the outcome's Err. Everything it
	// buffered was rolled back.
	Failed
)

func (k Kind) String() string {
	switch k {
	case Ran:
		return "ran"
	case Rejected:
		return "rejected"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Outcome is what Execute or Punctuate did.
type Outcome struct {
	Kind Kind
	// Reason is why a Rejected record is rejected: wire.ReasonUndecodable,
	// wire.ReasonProcessingError, a refusal's reason or a gate's own.
	Reason string
	// Node is the gate that rejected a Rejected record; empty for the
	// runtime's own reasons.
	Node string
	// Err is the cause of a rejection or a failure.
	Err error
}

// Emitter is the caller's side of a record's processing: it buffers
// outputs and rejections (graph.Emitter) and knows the lineage of the
// record (graph.Lineager).
type Emitter interface {
	graph.Emitter
	graph.Lineager
}

// A refusal is an output or a state change the caller refuses with an
// error that names a rejection reason (graph.Reasoned): one too large for
// its topic, or stamped outside its topic's range. The input record is
// rejected whole for it, even when a node dropped the error, unless a gate
// rejected the record in flight that met it (graph.Context.ForwardAlone).

// Executor runs consumed records and punctuations through a graph on a
// State, one at a time. One goroutine drives it.
type Executor struct {
	state *State
	gctx  graph.Context
	input graph.Input
	out   tracker
}

// NewExecutor returns an Executor on state. Records see the state when it
// has a transaction and the topology declares stores.
func NewExecutor(state *State) *Executor {
	x := &Executor{state: state}
	state.refused = x.out.note
	return x
}

// Execute runs one consumed record through the graph from src: it
// decodes the record's key and value with src's codecs and runs the
// record with em and the State. A record that cannot be decoded, whose
// run failed, whose rejection reached the top of the graph, or that met
// a refusal is Rejected, with everything it buffered rolled back.
//
// The error is never the record's fault: something its codecs depend on
// is out of reach (graph.IsUnavailable). What the record buffered is
// rolled back, and the caller's transaction cannot go on.
func (x *Executor) Execute(src *graph.Node, in graph.Input, key []byte, em Emitter) (Outcome, error) {
	x.out.reset(em)
	k, v, err := src.Decode(key, in.Value)
	if graph.IsUnavailable(err) {
		return Outcome{}, err
	}
	if err != nil {
		return rejected(wire.ReasonUndecodable, "", err), nil
	}
	x.input = in
	err = x.gctx.Run(src, &x.input, graph.Record{Key: k, Value: v, Headers: in.Headers, Timestamp: in.Timestamp}, &x.out, x.graphState())
	if ref := x.out.refusal(); ref != nil {
		em.Rollback(graph.Mark{})
		return rejected(ref.RejectReason(), "", ref), nil
	}
	if graph.IsUnavailable(err) {
		em.Rollback(graph.Mark{})
		return Outcome{}, err
	}
	if err != nil {
		em.Rollback(graph.Mark{})
		if rej, ok := errors.AsType[*graph.Rejection](err); ok {
			// The graph's source does not split records: the rejection
			// reached the top, so the whole input is the rejected record.
			return rejected(rej.Reason, rej.Node, rej), nil
		}
		return rejected(wire.ReasonProcessingError, "", err), nil
	}
	return Outcome{Kind: Ran}, nil
}

// Punctuate fires one timer on task at time at, as if a record of the
// task arrived, with em and the State. after names the last record
// processed before a stream-time firing ("" for a wall-clock one; see
// graph.Context.Punctuate). A punctuation whose run failed or met a
// refusal is Failed, with everything it buffered rolled back.
func (x *Executor) Punctuate(tm graph.TimerRef, task statestore.Task, at time.Time, after string, em Emitter) Outcome {
	x.out.reset(em)
	x.input = graph.Input{Partition: task.Partition, Offset: -1, Timestamp: at}
	st := x.graphState()
	if st != nil {
		x.state.SetTask(task)
	}
	err := x.gctx.Punctuate(tm, at, after, &x.input, &x.out, st)
	if ref := x.out.refusal(); ref != nil {
		err = ref
	}
	if err != nil {
		em.Rollback(graph.Mark{})
		return Outcome{Kind: Failed, Err: err}
	}
	return Outcome{Kind: Ran}
}

// graphState is the State as the graph's nodes see it: nil when there is
// no transaction or no store.
func (x *Executor) graphState() graph.State {
	if x.state.txn == nil || len(x.state.cfg.Stores) == 0 {
		return nil
	}
	return x.state
}

func rejected(reason, node string, err error) Outcome {
	return Outcome{Kind: Rejected, Reason: reason, Node: node, Err: err}
}

// tracker is the Emitter the graph sees: the caller's, with the refusals
// met while the record runs that no gate settled.
type tracker struct {
	em Emitter
	// refused holds the first unsettled refusal of each reason, in the
	// order met.
	refused []graph.Reasoned
}

func (t *tracker) reset(em Emitter) {
	t.em = em
	clear(t.refused)
	t.refused = t.refused[:0]
}

// note remembers err if it is a refusal and none of its reason is
// pending.
func (t *tracker) note(err error) {
	ref, ok := errors.AsType[graph.Reasoned](err)
	if !ok {
		return
	}
	for _, r := range t.refused {
		if r.RejectReason() == ref.RejectReason() {
			return
		}
	}
	t.refused = append(t.refused, ref)
}

// refusal is the refusal the record is rejected for: a size refusal
// before any other, else the first met; nil when none is pending.
func (t *tracker) refusal() graph.Reasoned {
	for _, r := range t.refused {
		if r.RejectReason() == wire.ReasonTooLarge {
			return r
		}
	}
	if len(t.refused) > 0 {
		return t.refused[0]
	}
	return nil
}

// Emit implements graph.Emitter.
func (t *tracker) Emit(topic string, key, value []byte, headers []graph.Header, ts time.Time) error {
	err := t.em.Emit(topic, key, value, headers, ts)
	if err != nil {
		t.note(err)
	}
	return err
}

// Reject implements graph.Emitter. A rejection of a refusal met on a path
// forwarded alone settles that refusal: the input record is not rejected
// whole for it.
func (t *tracker) Reject(rej *graph.Rejection) error {
	t.refused = slices.DeleteFunc(t.refused, func(r graph.Reasoned) bool { return errors.Is(rej, r) })
	return t.em.Reject(rej)
}

// Mark implements graph.Emitter.
func (t *tracker) Mark() graph.Mark { return t.em.Mark() }

// Rollback implements graph.Emitter.
func (t *tracker) Rollback(m graph.Mark) { t.em.Rollback(m) }

// Lineage implements graph.Lineager.
func (t *tracker) Lineage() string { return t.em.Lineage() }
