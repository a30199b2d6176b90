package topologytest

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/statestore"
	"github.com/onceflow/onceflow/topology"
)

// Record is a typed record piped in or read out.
type Record[K, V any] struct {
	Key       K
	Value     V
	Headers   topology.Headers
	Timestamp time.Time // piped: zero means the driver's wall clock
	Partition int32
	// Source names the input record an output descends from
	// ("topic/partition/offset"); set on records read out.
	Source string
}

// topic is a topic of the driver with the codecs of its keys and values.
type topic[K, V any] struct {
	d    *Driver
	name string
	kc   serde.Codec[K]
	vc   serde.Codec[V]
}

// InputTopic pipes typed records into one source topic.
type InputTopic[K, V any] struct{ topic[K, V] }

// Input returns a typed writer for a source topic of the driver's
// topology, encoding with kc and vc.
func Input[K, V any](d *Driver, name string, kc serde.Codec[K], vc serde.Codec[V]) *InputTopic[K, V] {
	return &InputTopic[K, V]{topic[K, V]{d: d, name: name, kc: kc, vc: vc}}
}

// Pipe writes one record with the driver's wall clock as its timestamp, on
// partition 0, and processes it (and what it sends through repartition
// topics) before returning.
func (in *InputTopic[K, V]) Pipe(key K, value V) error {
	return in.PipeRecord(Record[K, V]{Key: key, Value: value})
}

// PipeRecord writes one record as given and processes it.
func (in *InputTopic[K, V]) PipeRecord(r Record[K, V]) error {
	kb, err := in.kc.Encode(r.Key)
	if err != nil {
		return fmt.Errorf("topologytest: %s: key: %w", in.name, err)
	}
	vb, err := in.vc.Encode(r.Value)
	if err != nil {
		return fmt.Errorf("topologytest: %s: value: %w", in.name, err)
	}
	return in.PipeRaw(kb, vb, r.Headers, r.Timestamp, r.Partition)
}

// PipeRaw writes one record as bytes (a nil value is a tombstone; bytes
// the codec cannot read are rejected as undecodable) and processes it.
func (in *InputTopic[K, V]) PipeRaw(key, value []byte, headers topology.Headers, ts time.Time, partition int32) error {
	if ts.IsZero() {
		ts = in.d.now
	}
	return in.d.pipe(raw{topic: in.name, partition: partition, key: key, value: value, headers: toGraph(headers), timestamp: ts})
}

// OutputTopic reads typed records from one output topic.
type OutputTopic[K, V any] struct{ topic[K, V] }

// Output returns a typed reader for an output topic, decoding with kc and
// vc.
func Output[K, V any](d *Driver, name string, kc serde.Codec[K], vc serde.Codec[V]) *OutputTopic[K, V] {
	return &OutputTopic[K, V]{topic[K, V]{d: d, name: name, kc: kc, vc: vc}}
}

// ReadAll returns the records written to the topic since the last read, in
// the order they were written. A topic the topology never writes (a typo,
// a repartition or through topic, read back inside) is an error naming
// those it does, so that a "no output" assertion cannot pass by mistake.
func (out *OutputTopic[K, V]) ReadAll() ([]Record[K, V], error) {
	if written := out.d.writtenTopics(); !slices.Contains(written, out.name) {
		return nil, fmt.Errorf("topologytest: the topology never writes topic %q (it writes %s)", out.name, strings.Join(written, ", "))
	}
	var rs []Record[K, V]
	for _, o := range out.d.outputs[out.name] {
		r := Record[K, V]{Headers: fromGraph(o.headers), Timestamp: o.timestamp, Partition: o.partition, Source: o.source}
		var err error
		if o.key != nil {
			if r.Key, err = out.kc.Decode(o.key); err != nil {
				return nil, fmt.Errorf("topologytest: %s: key: %w", out.name, err)
			}
		}
		if r.Value, err = out.vc.Decode(o.value); err != nil {
			return nil, fmt.Errorf("topologytest: %s: value: %w", out.name, err)
		}
		rs = append(rs, r)
	}
	delete(out.d.outputs, out.name)
	return rs, nil
}

// writtenTopics lists, sorted, the topics the topology's sinks write that
// no sub-topology reads back: those Output can read (outboxes included).
func (d *Driver) writtenTopics() []string {
	var ts []string
	for _, n := range d.g.Nodes {
		if n.Kind == graph.KindSink && d.g.Source(n.Topic) == nil && !slices.Contains(ts, n.Topic) {
			ts = append(ts, n.Topic)
		}
	}
	slices.Sort(ts)
	return ts
}

// Get reads key from a store, in the task of partition p of the store's
// sub-topology.
func Get[K, V any](d *Driver, s topology.KeyValueStore[K, V], p int32, key K) (V, bool, error) {
	var zero V
	task, err := d.task(s.Name(), p)
	if err != nil {
		return zero, false, err
	}
	kb, err := s.KeyCodec().Encode(key)
	if err != nil {
		return zero, false, fmt.Errorf("topologytest: store %q: key: %w", s.Name(), err)
	}
	vb, ok, err := d.db.Get(s.Name(), task, kb)
	if err != nil || !ok {
		return zero, false, err
	}
	v, err := s.ValueCodec().Decode(vb)
	if err != nil {
		return zero, false, fmt.Errorf("topologytest: store %q: value: %w", s.Name(), err)
	}
	return v, true, nil
}

// Put seeds key = value in a store, in the task of partition p.
func Put[K, V any](d *Driver, s topology.KeyValueStore[K, V], p int32, key K, value V) error {
	task, err := d.task(s.Name(), p)
	if err != nil {
		return err
	}
	kb, err := s.KeyCodec().Encode(key)
	if err != nil {
		return fmt.Errorf("topologytest: store %q: key: %w", s.Name(), err)
	}
	vb, err := s.ValueCodec().Encode(value)
	if err != nil {
		return fmt.Errorf("topologytest: store %q: value: %w", s.Name(), err)
	}
	txn := d.db.Begin()
	defer txn.Discard()
	if err := txn.Put(s.Name(), task, kb, vb); err != nil {
		return err
	}
	d.changelog++
	return txn.Apply(map[statestore.StoreTask]int64{{Store: s.Name(), Task: task}: d.changelog})
}

// Seen reports whether the dedup gate named gate remembers eventID in the
// task of partition p.
func (d *Driver) Seen(gate string, p int32, eventID string) (bool, error) {
	task, err := d.task(gate, p)
	if err != nil {
		return false, err
	}
	if d.stores[gate].Kind != graph.StoreDedup {
		return false, fmt.Errorf("topologytest: %q is not a dedup gate", gate)
	}
	_, ok, err := d.db.Get(gate, task, []byte(eventID))
	return ok, err
}

// Version returns the last version the version gate named gate accepted
// for entity in the task of partition p.
func (d *Driver) Version(gate string, p int32, entity string) (uint64, bool, error) {
	task, err := d.task(gate, p)
	if err != nil {
		return 0, false, err
	}
	if d.stores[gate].Kind != graph.StoreVersion {
		return 0, false, fmt.Errorf("topologytest: %q is not a version gate", gate)
	}
	b, ok, err := d.db.Get(gate, task, []byte(entity))
	if err != nil || !ok {
		return 0, false, err
	}
	if len(b) != 8 {
		return 0, false, fmt.Errorf("topologytest: version gate %q holds %d bytes for %q, want 8", gate, len(b), entity)
	}
	return binary.BigEndian.Uint64(b), true, nil
}

// StreamTime returns the stream time of the task of partition p of the
// sub-topology that reads topic (zero before its first dedup decision).
func (d *Driver) StreamTime(topic string, p int32) time.Time {
	return d.state.StreamTime(statestore.Task{SubTopology: d.g.SubTopologyOf(topic), Partition: p})
}

// StoreLen returns how many entries a store holds in the task of
// partition p, whatever their kind (a window store keeps its windows and
// their indexes): for tests of what state is kept and what expires.
func (d *Driver) StoreLen(store string, p int32) (int, error) {
	task, err := d.task(store, p)
	if err != nil {
		return 0, err
	}
	n := 0
	err = d.db.Range(store, task, nil, nil, func(_, _ []byte) bool { n++; return true })
	return n, err
}

func (d *Driver) task(store string, p int32) (statestore.Task, error) {
	st, ok := d.stores[store]
	if !ok {
		return statestore.Task{}, fmt.Errorf("topologytest: the topology has no store %q", store)
	}
	if p < 0 || p >= d.parts {
		return statestore.Task{}, fmt.Errorf("topologytest: partition %d: the driver has %d", p, d.parts)
	}
	return statestore.Task{SubTopology: st.Sub, Partition: p}, nil
}

func toGraph(hs topology.Headers) []graph.Header {
	out := make([]graph.Header, len(hs))
	for i, h := range hs {
		out[i] = graph.Header(h)
	}
	return out
}

func fromGraph(hs []graph.Header) topology.Headers {
	out := make(topology.Headers, len(hs))
	for i, h := range hs {
		out[i] = topology.Header(h)
	}
	return out
}

// OutboxTopic is the outbox topic of the external sink name
// (topology.ToSink) in the driver: read its delivery requests with Output,
// keyed by the record key as text, the payload as value, and the
// idempotency key in the header "onceflow-idempotency-key".
func OutboxTopic(sink string) string { return ApplicationID + "-sink-" + sink }
