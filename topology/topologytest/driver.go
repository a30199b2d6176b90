// Package topologytest runs a topology in-process, without a broker, for
// unit tests: pipe typed records into its source topics, read typed
// records from its output topics and the records its gates and failures
// rejected, look into and seed its stores, and move the wall clock.
//
// The driver runs the same graph and the same state code a replica runs
// (the rejection rules, the dedup and version gates, stream time, record
// scopes), on an in-memory state store. What it leaves out is Kafka:
// every piped record is processed, and its outputs and state committed,
// before Pipe returns, as if each record were its own transaction. Records
// written to a repartition topic are read back by the sub-topology that
// reads it within the same Pipe, keyed to their partition as a replica's
// would be (Kafka's murmur2 partitioner).
//
//	d, err := topologytest.New(tp, topologytest.Config{})
//	...
//	defer d.Close()
//	in := topologytest.Input(d, "orders", serde.String(), serde.JSON[Order]())
//	out := topologytest.Output(d, "totals", serde.String(), serde.Int64())
//	in.Pipe("c-1", Order{...})
//	got := out.ReadAll()
package topologytest

import (
	"fmt"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/statestore"
	"github.com/onceflow/onceflow/topology"
)

// ApplicationID is the application id the driver runs the topology under:
// repartition topics are "<ApplicationID>-<name>-repartition".
const ApplicationID = "test"

// Header names the driver writes, as a replica does.
const (
	HeaderSource       = wire.HeaderSource
	HeaderRejectReason = wire.HeaderRejectReason
	// HeaderRejectedRecord marks a rejected record that is not an input
	// record: RejectedWindowResult for a window's final result, whose
	// bounds (milliseconds since the epoch) HeaderWindowStart and
	// HeaderWindowEnd hold.
	HeaderRejectedRecord = wire.HeaderRejectedRecord
	HeaderWindowStart    = wire.HeaderWindowStart
	HeaderWindowEnd      = wire.HeaderWindowEnd
)

// RejectedWindowResult is HeaderRejectedRecord's value on a window's final
// result rejected as itself: its key and aggregate as the window's store
// encodes them.
const RejectedWindowResult = wire.RejectedWindowResult

// Rejection reasons of the runtime (the gates have their own: duplicate,
// conflict, stale).
const (
	ReasonUndecodable     = wire.ReasonUndecodable
	ReasonProcessingError = wire.ReasonProcessingError
)

// Config configures a Driver. The zero value means every default.
type Config struct {
	// Partitions is the partition count of every topic. Default 1.
	Partitions int32
	// WallClock is where the driver's wall clock starts; it moves only
	// with AdvanceWallClock. It stamps records piped without a timestamp,
	// and bounds stream time (MaxClockSkew). Default: the time New ran.
	WallClock time.Time
	// MaxClockSkew is how far ahead of the wall clock a record's
	// timestamp may move stream time, as in processor.Config. Default 1
	// hour.
	MaxClockSkew time.Duration
}

// Driver runs one topology. It is not safe for concurrent use.
type Driver struct {
	g      *graph.Graph
	parts  int32
	now    time.Time
	db     *statestore.DB
	state  *taskstate.State
	exec   *taskstate.Executor
	stores map[string]taskstate.Store

	offsets   map[string]map[int32]int64 // next offset per topic and partition
	changelog int64                      // next changelog offset (any store, any task)
	outputs   map[string][]output        // by topic, unread
	rejected  []Rejection                // unread
	sched     graph.Schedule             // punctuators
	punctErrs []error                    // unread

	// The record being processed.
	input   graph.Input
	source  string
	inKey   []byte
	pending []output // outputs of the record, internal topics included
	rejects []Rejection
}

// output is one record a sink encoded.
type output struct {
	topic      string
	partition  int32
	key, value []byte
	headers    []graph.Header
	timestamp  time.Time
	source     string
}

// Rejection is one record written to the rejected-records topic: the input
// record as consumed (or, for a window's final result that failed, that
// result, marked by HeaderRejectedRecord), with the reason, the gate or
// stage that rejected it (empty for the runtime's own reasons) and the
// error.
type Rejection struct {
	Reason string
	Node   string
	Error  string
	// Source names the input record: "topic/partition/offset".
	Source     string
	Key, Value []byte
	Headers    topology.Headers
}

// New validates the topology and prepares a driver for it, with empty
// state. Close it when done.
func New(tp *topology.Topology, cfg Config) (*Driver, error) {
	g, err := graph.Compile(tp)
	if err != nil {
		return nil, err
	}
	if cfg.Partitions < 0 || cfg.MaxClockSkew < 0 {
		return nil, fmt.Errorf("topologytest: partitions %d and max clock skew %v must not be negative", cfg.Partitions, cfg.MaxClockSkew)
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
	}
	if cfg.WallClock.IsZero() {
		cfg.WallClock = time.Now()
	}
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = time.Hour
	}
	d := &Driver{g: g.WithPrefix(ApplicationID), parts: cfg.Partitions, now: cfg.WallClock,
		offsets: map[string]map[int32]int64{}, outputs: map[string][]output{}, stores: map[string]taskstate.Store{}}
	var dedup []string
	for _, st := range d.g.SubTopologies {
		for _, s := range st.Stores {
			d.stores[s.Name] = taskstate.Store{Store: s, Sub: st.ID}
			if s.Kind == graph.StoreDedup {
				dedup = append(dedup, s.Name)
			}
		}
	}
	slices.Sort(dedup)
	if d.db, err = statestore.Open("", statestore.Options{DedupStores: dedup, NoSync: true}); err != nil {
		return nil, fmt.Errorf("topologytest: %w", err)
	}
	for sub := range d.g.SubTopologies {
		// A wall-clock punctuator's first firing is one interval after New.
		for _, tm := range d.g.Timers(sub, graph.WallClock) {
			for p := range d.parts {
				d.sched.Due(tm, p, d.now)
			}
		}
	}
	d.state = taskstate.New(taskstate.Config{
		Stores:       d.stores,
		MaxClockSkew: cfg.MaxClockSkew,
		Now:          func() time.Time { return d.now },
		Source:       func() string { return d.source },
	})
	d.exec = taskstate.NewExecutor(d.state)
	return d, nil
}

// Close releases the driver's state.
func (d *Driver) Close() error { return d.db.Close() }

// WallClock returns the driver's wall clock.
func (d *Driver) WallClock() time.Time { return d.now }

// AdvanceWallClock moves the wall clock on by by and fires the
// wall-clock punctuators that brings due, on every partition, each as its
// own transaction (records they send through repartition topics are
// processed before it returns).
func (d *Driver) AdvanceWallClock(by time.Duration) error {
	d.now = d.now.Add(by)
	for sub := range d.g.SubTopologies {
		for _, tm := range d.g.Timers(sub, graph.WallClock) {
			for p := range d.parts {
				if !d.sched.Due(tm, p, d.now) {
					continue
				}
				task := statestore.Task{SubTopology: sub, Partition: p}
				if err := d.punctuate(tm, task, d.now, ""); err != nil {
					return err
				}
				for queue := d.route(nil); len(queue) > 0; queue = queue[1:] {
					if err := d.pipe(queue[0]); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// PunctuationErrors returns the errors of punctuations since the last
// call; each punctuation that failed left no state change and no output.
func (d *Driver) PunctuationErrors() []error {
	errs := d.punctErrs
	d.punctErrs = nil
	return errs
}

// Rejections returns the records rejected since the last call, in order.
func (d *Driver) Rejections() []Rejection {
	r := d.rejected
	d.rejected = nil
	return r
}

// raw is one consumed record.
type raw struct {
	topic      string
	partition  int32
	key, value []byte
	headers    []graph.Header
	timestamp  time.Time
	source     string // lineage carried through a repartition topic; "" for an input
}

// pipe processes one consumed record and what it sends through
// repartition topics, each as its own transaction, and fires the
// stream-time punctuators each of them brings due.
func (d *Driver) pipe(r raw) error {
	queue := []raw{r}
	for len(queue) > 0 {
		r, queue = queue[0], queue[1:]
		if err := d.process(r); err != nil {
			return err
		}
		queue = d.route(queue)
		task := statestore.Task{SubTopology: d.g.SubTopologyOf(r.topic), Partition: r.partition}
		after := wire.Source(d.input.Topic, d.input.Partition, d.input.Offset)
		for _, tm := range d.g.Timers(task.SubTopology, graph.StreamTime) {
			if at := d.state.StreamTime(task); !at.IsZero() && d.sched.Due(tm, task.Partition, at) {
				if err := d.punctuate(tm, task, at, after); err != nil {
					return err
				}
				queue = d.route(queue)
			}
		}
	}
	return nil
}

// route hands what the last transaction produced on: records for a
// repartition topic join the queue, the others become outputs.
func (d *Driver) route(queue []raw) []raw {
	for _, o := range d.pending {
		if d.g.Source(o.topic) != nil {
			// A repartition topic: the sub-topology reading it gets it next.
			// An output has a consumed record's fields, lineage included.
			queue = append(queue, raw(o))
			continue
		}
		d.outputs[o.topic] = append(d.outputs[o.topic], o)
	}
	d.rejected = append(d.rejected, d.rejects...)
	d.pending, d.rejects = d.pending[:0], d.rejects[:0]
	return queue
}

// process runs one consumed record through its sub-topology and commits
// what it produced. The error is the driver's, never the record's.
func (d *Driver) process(r raw) error {
	src := d.g.Source(r.topic)
	if src == nil {
		return fmt.Errorf("topologytest: no source reads topic %q", r.topic)
	}
	if r.partition < 0 || r.partition >= d.parts {
		return fmt.Errorf("topologytest: partition %d of %q: the driver has %d partitions per topic (Config.Partitions)", r.partition, r.topic, d.parts)
	}
	parts := d.offsets[r.topic]
	if parts == nil {
		parts = map[int32]int64{}
		d.offsets[r.topic] = parts
	}
	offset := parts[r.partition]
	parts[r.partition]++
	d.source = r.source
	if d.source == "" {
		d.source = wire.Source(r.topic, r.partition, offset)
	}
	d.inKey = r.key
	d.input = graph.Input{Topic: r.topic, Partition: r.partition, Offset: offset, Headers: r.headers, Value: r.value, Timestamp: r.timestamp}
	task := statestore.Task{SubTopology: d.g.SubTopologyOf(r.topic), Partition: r.partition}
	return d.transact(task, func() error {
		if len(d.g.Timers(task.SubTopology, graph.StreamTime)) > 0 {
			// Stream-time punctuators follow every record, as a replica's do.
			if _, err := d.state.ObserveTime(r.timestamp); err != nil {
				return err
			}
		}
		o, err := d.exec.Execute(src, d.input, r.key, emitter{d})
		if err != nil {
			return err // an outage, as a replica fails its transaction
		}
		if o.Kind == taskstate.Rejected {
			d.rejects = append(d.rejects, d.rejection(o.Reason, o.Node, o.Err))
		}
		return nil
	})
}

// punctuate fires one timer on task at time at, as its own transaction.
// A punctuation that fails leaves nothing and is reported in
// PunctuationErrors.
func (d *Driver) punctuate(tm graph.TimerRef, task statestore.Task, at time.Time, after string) error {
	d.source = wire.PunctuatorSource(tm.Node.Name, task.SubTopology, task.Partition)
	d.inKey = nil
	d.input = graph.Input{Partition: task.Partition, Offset: -1, Timestamp: at}
	return d.transact(task, func() error {
		if o := d.exec.Punctuate(tm, task, at, after, emitter{d}); o.Kind == taskstate.Failed {
			d.punctErrs = append(d.punctErrs, o.Err)
		}
		return nil
	})
}

// transact runs fn on task's record scope in a transaction of its own,
// commits the scope and applies the state as a replica does after its
// Kafka commit.
func (d *Driver) transact(task statestore.Task, fn func() error) error {
	d.pending, d.rejects = d.pending[:0], d.rejects[:0]
	txn := d.db.Begin()
	defer txn.Discard()
	d.state.Begin(txn)
	d.state.SetTask(task)
	defer d.state.Begin(nil)
	if err := fn(); err != nil {
		return fmt.Errorf("topologytest: state: %w", err)
	}
	if err := d.state.Commit(); err != nil {
		return fmt.Errorf("topologytest: state: %w", err)
	}
	if _, err := d.state.Expire(0); err != nil {
		return fmt.Errorf("topologytest: expire: %w", err)
	}
	// Apply with an offset for every store and task the transaction
	// changed.
	offsets := map[statestore.StoreTask]int64{}
	for _, c := range txn.Changes() {
		d.changelog++
		offsets[statestore.StoreTask{Store: c.Store, Task: c.Task}] = d.changelog
	}
	if err := txn.Apply(offsets); err != nil {
		return fmt.Errorf("topologytest: apply: %w", err)
	}
	return nil
}

// emitter is the driver's side of a record's processing (graph.Emitter).
type emitter struct{ d *Driver }

// Emit implements graph.Emitter.
func (em emitter) Emit(topic string, key, value []byte, headers []graph.Header, ts time.Time) error {
	d := em.d
	d.pending = append(d.pending, output{topic: topic, partition: wire.Partition(key, d.input.Partition, d.parts),
		key: key, value: value, headers: headers, timestamp: ts, source: d.source})
	return nil
}

// Lineage implements graph.Lineager.
func (em emitter) Lineage() string { return em.d.source }

// Reject implements graph.Emitter.
func (em emitter) Reject(rej *graph.Rejection) error {
	d := em.d
	r := d.rejection(rej.Reason, rej.Node, rej)
	if as := rej.Record; as != nil {
		r.Key, r.Value, r.Headers = as.Key, as.Value, fromGraph(as.Headers)
	}
	d.rejects = append(d.rejects, r)
	return nil
}

// Mark implements graph.Emitter.
func (em emitter) Mark() graph.Mark {
	d := em.d
	return graph.Mark{Outputs: len(d.pending), Rejections: len(d.rejects), State: d.state.Mark()}
}

// Rollback implements graph.Emitter.
func (em emitter) Rollback(m graph.Mark) {
	d := em.d
	d.pending = d.pending[:m.Outputs]
	d.rejects = d.rejects[:m.Rejections]
	d.state.Rollback(m.State)
}

func (d *Driver) rejection(reason, node string, cause error) Rejection {
	return Rejection{Reason: reason, Node: node, Error: cause.Error(), Source: d.source,
		Key: d.inKey, Value: d.input.Value, Headers: fromGraph(d.input.Headers)}
}
