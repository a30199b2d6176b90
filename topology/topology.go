package topology

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/internal/compile"
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/serde"
)

// Topology is a graph under construction. Create one with New.
type Topology struct {
	stores map[string]bool
	name   string
	nodes  []*graph.Node
	errs   []error
	seq    map[string]int
	names  map[string]bool
}

// New starts an empty topology. The name appears in Describe and logs.
func New(name string) *Topology {
	t := &Topology{name: name, seq: map[string]int{}, names: map[string]bool{}}
	if strings.TrimSpace(name) == "" {
		t.errorf("topology name is empty")
	}
	return t
}

// Name returns the topology's name.
func (t *Topology) Name() string { return t.name }

func (t *Topology) errorf(format string, args ...any) {
	t.errs = append(t.errs, fmt.Errorf("topology: "+format, args...))
}

// add creates a node with a unique name; an empty name is generated from op.
func (t *Topology) add(kind graph.Kind, op, name string, parent *graph.Node) *graph.Node {
	if name == "" {
		t.seq[op]++
		name = fmt.Sprintf("%s-%d", op, t.seq[op])
		for t.names[name] {
			t.seq[op]++
			name = fmt.Sprintf("%s-%d", op, t.seq[op])
		}
	} else if t.names[name] {
		t.errorf("node name %q is used twice", name)
	}
	t.names[name] = true
	n := &graph.Node{ID: len(t.nodes), Name: name, Kind: kind, Op: op}
	t.nodes = append(t.nodes, n)
	if parent != nil {
		parent.Children = append(parent.Children, n)
	}
	return n
}

// Stream is a typed edge of the graph: the records one node produces.
// The zero Stream is invalid; streams come from Source and the stages.
type Stream[K, V any] struct {
	t    *Topology
	node *graph.Node
}

// valid reports whether s can be continued. A zero Stream belongs to no
// topology, so there is nowhere to record the mistake; the stage is not
// added, and the topology's Validate then reports the source or stage that
// leads nowhere.
func (s Stream[K, V]) valid(stage string) bool {
	if s.t == nil || s.node == nil {
		return false
	}
	if s.node.Kind == graph.KindSink {
		s.t.errorf("%s: cannot continue from sink %q", stage, s.node.Name)
		return false
	}
	return true
}

// KeyValue is a key and a value, for FlatMap results.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Headers are a record's headers, in order.
type Headers []Header

// Get returns the last value of header key.
func (h Headers) Get(key string) ([]byte, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Key == key {
			return h[i].Value, true
		}
	}
	return nil, false
}

// Record is a typed record as a processor sees it.
type Record[K, V any] struct {
	Key       K
	Value     V
	Headers   Headers
	Timestamp time.Time
}

// InputRecord names the consumed record being processed.
type InputRecord struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Context is what a Process function uses to emit results.
type Context[K, V any] struct {
	c *graph.Context
}

// Forward sends r downstream. It may be called any number of times.
func (c Context[K, V]) Forward(r Record[K, V]) error {
	return c.c.Forward(graph.Record{Key: r.Key, Value: r.Value, Headers: r.Headers.graph(), Timestamp: r.Timestamp})
}

// Input returns the coordinates of the consumed record being processed.
func (c Context[K, V]) Input() InputRecord {
	in := c.c.Input()
	return InputRecord{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset}
}

// InputHeaders returns the headers of the consumed record being processed.
func (c Context[K, V]) InputHeaders() Headers { return headersOf(c.c.Input().Headers) }

// ProcessFunc handles one record and forwards any number of results. An
// error rejects the input record (reason processing-error): none of its
// results are written and processing goes on with the next record.
type ProcessFunc[K, V, K2, V2 any] func(ctx Context[K2, V2], r Record[K, V]) error

// as unboxes v, yielding the zero value for a nil interface.
func as[T any](v any) T {
	t, _ := v.(T)
	return t
}

func typed[K, V any](r graph.Record) Record[K, V] {
	return Record[K, V]{Key: as[K](r.Key), Value: as[V](r.Value), Headers: headersOf(r.Headers), Timestamp: r.Timestamp}
}

// Source reads topic, decoding keys with kc and values with vc. A null key
// decodes to the zero K; a null value goes to the value codec. Records that
// do not decode are rejected (reason undecodable), never dropped silently.
func Source[K, V any](t *Topology, topic string, kc serde.Codec[K], vc serde.Codec[V]) Stream[K, V] {
	if t == nil {
		return Stream[K, V]{}
	}
	if err := checkTopic(topic); err != nil {
		t.errorf("source: %v", err)
	}
	for _, n := range t.nodes {
		if n.Kind == graph.KindSource && n.Topic == topic && topic != "" {
			t.errorf("source: topic %q is read twice", topic)
		}
	}
	if kc == nil {
		t.errorf("source %q: key codec is nil", topic)
	}
	if vc == nil {
		t.errorf("source %q: value codec is nil", topic)
	}
	n := t.add(graph.KindSource, "source", "source-"+topic, nil)
	n.Topic = topic
	n.Splits = true
	if kc != nil && vc != nil {
		n.Format = kc.Name() + "/" + vc.Name()
		n.Decode = decoder(kc, vc)
	}
	return Stream[K, V]{t: t, node: n}
}

// decoder decodes a consumed key and value; a null key is the zero K.
func decoder[K, V any](kc serde.Codec[K], vc serde.Codec[V]) func(kb, vb []byte) (any, any, error) {
	return func(kb, vb []byte) (any, any, error) {
		var k K
		if kb != nil {
			var err error
			if k, err = kc.Decode(kb); err != nil {
				return nil, nil, fmt.Errorf("key: %w", err)
			}
		}
		v, err := vc.Decode(vb)
		if err != nil {
			return nil, nil, fmt.Errorf("value: %w", err)
		}
		return k, v, nil
	}
}

// To writes the stream to topic, encoding with kc and vc. The runtime
// creates the topic when missing.
func To[K, V any](s Stream[K, V], topic string, kc serde.Codec[K], vc serde.Codec[V]) {
	if !s.valid("to " + topic) {
		return
	}
	t := s.t
	if err := checkTopic(topic); err != nil {
		t.errorf("to: %v", err)
	}
	if kc == nil {
		t.errorf("to %q: key codec is nil", topic)
	}
	if vc == nil {
		t.errorf("to %q: value codec is nil", topic)
	}
	n := t.add(graph.KindSink, "sink", "", s.node)
	n.Topic = topic
	if kc != nil && vc != nil {
		n.Format = kc.Name() + "/" + vc.Name()
		n.Encode = func(k, v any) ([]byte, []byte, error) {
			kb, err := kc.Encode(as[K](k))
			if err != nil {
				return nil, nil, fmt.Errorf("key: %w", err)
			}
			vb, err := vc.Encode(as[V](v))
			if err != nil {
				return nil, nil, fmt.Errorf("value: %w", err)
			}
			return kb, vb, nil
		}
	}
}

// stage adds a processor node after s, recording an error for a nil fn.
func stage[K, V, K2, V2 any](s Stream[K, V], op, name string, fnNil bool, proc func(*graph.Context, graph.Record) error) Stream[K2, V2] {
	if !s.valid(op) {
		return Stream[K2, V2]{}
	}
	n := s.t.add(graph.KindProcessor, op, name, s.node)
	if fnNil {
		s.t.errorf("%s %q: function is nil", op, n.Name)
	}
	n.Process = proc
	return Stream[K2, V2]{t: s.t, node: n}
}

// Map replaces each record's key and value. A stage that needs all
// records of a key in one task (Reduce, Count, Sum) cannot follow it
// directly: Repartition in between (Validate says so).
func Map[K, V, K2, V2 any](s Stream[K, V], fn func(K, V) (K2, V2, error)) Stream[K2, V2] {
	out := stage[K, V, K2, V2](s, "map", "", fn == nil, func(c *graph.Context, r graph.Record) error {
		k, v, err := fn(as[K](r.Key), as[V](r.Value))
		if err != nil {
			return err
		}
		r.Key, r.Value = k, v
		return c.Forward(r)
	})
	if out.node != nil {
		out.node.ChangesKey = true
	}
	return out
}

// MapValues replaces each record's value, keeping the key.
func MapValues[K, V, V2 any](s Stream[K, V], fn func(V) (V2, error)) Stream[K, V2] {
	return stage[K, V, K, V2](s, "map-values", "", fn == nil, func(c *graph.Context, r graph.Record) error {
		v, err := fn(as[V](r.Value))
		if err != nil {
			return err
		}
		r.Value = v
		return c.Forward(r)
	})
}

// Filter keeps the records for which keep returns true. Filtered records
// still commit their offsets.
func Filter[K, V any](s Stream[K, V], keep func(K, V) bool) Stream[K, V] {
	return stage[K, V, K, V](s, "filter", "", keep == nil, func(c *graph.Context, r graph.Record) error {
		if !keep(as[K](r.Key), as[V](r.Value)) {
			return nil
		}
		return c.Forward(r)
	})
}

// FlatMap turns each record into zero or more records. Each of them flows
// on its own: a gate downstream that rejects one rejects that one only.
// The keys may change, like Map's.
func FlatMap[K, V, K2, V2 any](s Stream[K, V], fn func(K, V) ([]KeyValue[K2, V2], error)) Stream[K2, V2] {
	out := stage[K, V, K2, V2](s, "flat-map", "", fn == nil, func(c *graph.Context, r graph.Record) error {
		kvs, err := fn(as[K](r.Key), as[V](r.Value))
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			out := r
			out.Key, out.Value = kv.Key, kv.Value
			if err := c.Forward(out); err != nil {
				return err
			}
		}
		return nil
	})
	if out.node != nil {
		out.node.Splits = true
		out.node.ChangesKey = true
	}
	return out
}

// Repartition writes the stream to an internal topic,
// "<application id>-<name>-repartition", partitioned by the records' keys,
// and reads it back: what follows runs as a new sub-topology in which all
// records with one key share a task. Use it before Dedup when duplicates
// of an event could arrive on different partitions: key the records by
// their event id first (Map, or Process to read a header). The internal
// topic gets the partition count of the sub-topology that writes it. The
// records keep their headers and timestamps, and their lineage names the
// original input record, not the internal topic.
func Repartition[K, V any](s Stream[K, V], name string, kc serde.Codec[K], vc serde.Codec[V]) Stream[K, V] {
	if !s.valid("repartition") {
		return Stream[K, V]{}
	}
	t := s.t
	topic := name + "-repartition"
	if err := checkTopic(name); err != nil {
		t.errorf("repartition: %v", err)
	}
	for _, n := range t.nodes {
		if n.Internal && n.Topic == topic && n.Kind == graph.KindSink {
			t.errorf("repartition %q is declared twice", name)
		}
	}
	To(s, topic, kc, vc)
	sink := t.nodes[len(t.nodes)-1]
	sink.Internal = true
	src := t.add(graph.KindSource, "source", "source-"+topic, nil)
	src.Topic = topic
	src.Internal = true
	src.Splits = true
	if kc != nil && vc != nil {
		src.Format = kc.Name() + "/" + vc.Name()
		src.Decode = decoder(kc, vc)
	}
	return Stream[K, V]{t: t, node: src}
}

// Merge combines streams of one type into one. Their sources join one
// sub-topology, so they must be co-partitioned (same partition count): a
// task then sees partition p of every one of them.
func Merge[K, V any](streams ...Stream[K, V]) Stream[K, V] {
	var t *Topology
	for _, s := range streams {
		if s.valid("merge") {
			if t != nil && s.t != t {
				t.errorf("merge: streams come from different topologies")
				return Stream[K, V]{}
			}
			t = s.t
		}
	}
	if t == nil {
		return Stream[K, V]{}
	}
	n := t.add(graph.KindProcessor, "merge", "", nil)
	n.Process = func(c *graph.Context, r graph.Record) error { return c.Forward(r) }
	for _, s := range streams {
		if s.valid("merge") {
			s.node.Children = append(s.node.Children, n)
		}
	}
	return Stream[K, V]{t: t, node: n}
}

// Process runs fn on every record; fn forwards results through its context
// and can read the input record's coordinates and headers. name must be
// unique in the topology. Each record fn forwards flows on its own: a gate
// downstream that rejects one rejects that one only, and Forward returns
// nil for it. The keys may change, like Map's.
//
// stores are the state stores fn reads and writes (see Store). A store
// belongs to one sub-topology; its tasks each keep their own part.
func Process[K, V, K2, V2 any](s Stream[K, V], name string, fn ProcessFunc[K, V, K2, V2], stores ...StoreRef) Stream[K2, V2] {
	if s.t != nil && s.node != nil && strings.TrimSpace(name) == "" {
		s.t.errorf("process: name is empty")
	}
	out := stage[K, V, K2, V2](s, "process", name, fn == nil, func(c *graph.Context, r graph.Record) error {
		return fn(Context[K2, V2]{c: c}, typed[K, V](r))
	})
	if out.node == nil {
		return out
	}
	out.node.Splits = true
	out.node.ChangesKey = true
	for _, st := range stores {
		if st == nil || st.owner() == nil {
			s.t.errorf("process %q: store is not declared (use Store)", out.node.Name)
			continue
		}
		if st.owner() != s.t {
			s.t.errorf("process %q: store %q belongs to another topology", out.node.Name, st.spec().Name)
			continue
		}
		out.node.Stores = append(out.node.Stores, st.spec())
	}
	return out
}

// checkTopic applies Kafka's rules for topic names.
func checkTopic(topic string) error {
	switch {
	case topic == "":
		return errors.New("topic name is empty")
	case topic == "." || topic == "..":
		return fmt.Errorf("topic name %q is not allowed", topic)
	case len(topic) > 249:
		return fmt.Errorf("topic name %q is longer than 249 characters", topic)
	}
	for _, r := range topic {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q has %q: only ASCII letters, digits, '.', '_' and '-' are allowed", topic, r)
		}
	}
	return nil
}

// Validate returns every problem in the topology at once, or nil.
func (t *Topology) Validate() error {
	if t == nil {
		return errors.New("topology: nil topology")
	}
	errs := slices.Clone(t.errs)
	var sources, sinks int
	for _, n := range t.nodes {
		switch n.Kind {
		case graph.KindSource:
			sources++
		case graph.KindSink:
			sinks++
		case graph.KindProcessor:
			if len(n.Children) == 0 {
				// A dead end is allowed only if it can have effects; a plain
				// stateless stage that leads nowhere is a mistake.
				if n.Op != "process" && n.Op != "reduce" {
					errs = append(errs, fmt.Errorf("topology: %s %q leads nowhere: add an output with To", n.Op, n.Name))
				}
			}
		}
	}
	if sources == 0 {
		errs = append(errs, errors.New("topology: no source: add one with Source"))
	}
	errs = append(errs, t.checkStores()...)
	errs = append(errs, t.checkKeyedState()...)
	errs = append(errs, t.checkLoops()...)
	for _, n := range t.nodes {
		if n.Kind == graph.KindSource && len(n.Children) == 0 {
			errs = append(errs, fmt.Errorf("topology: source %q is not used", n.Topic))
		}
	}
	return errors.Join(errs...)
}

func init() {
	compile.Register(func(t any) (*graph.Graph, error) {
		tp, ok := t.(*Topology)
		if !ok || tp == nil {
			return nil, errors.New("topology: nil topology")
		}
		return tp.compile()
	})
}

// compile validates the topology and returns its executable form, for the
// runtime (through internal/compile); users call Validate or Describe.
func (t *Topology) compile() (*graph.Graph, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return graph.New(t.name, t.nodes), nil
}

// checkKeyedState reports a stage keyed by the record key (Reduce, Count,
// Sum) that a key-changing stage feeds without a Repartition in between:
// records with one key could then be in different tasks, and each task
// would aggregate its own part.
func (t *Topology) checkKeyedState() []error {
	parents := map[*graph.Node][]*graph.Node{}
	for _, n := range t.nodes {
		for _, c := range n.Children {
			parents[c] = append(parents[c], n)
		}
	}
	// changer returns a key-changing node upstream of n within its
	// sub-topology (a source, repartition included, ends the walk).
	seen := map[*graph.Node]bool{}
	var changer func(n *graph.Node) *graph.Node
	changer = func(n *graph.Node) *graph.Node {
		for _, p := range parents[n] {
			if seen[p] {
				continue
			}
			seen[p] = true
			if p.ChangesKey {
				return p
			}
			if c := changer(p); c != nil {
				return c
			}
		}
		return nil
	}
	var errs []error
	for _, n := range t.nodes {
		if !n.KeyedState {
			continue
		}
		clear(seen)
		if c := changer(n); c != nil {
			errs = append(errs, fmt.Errorf("topology: %s %q aggregates by key, but %s %q before it may change the key, so one key's records can be in different partitions: add topology.Repartition(stream, name, keyCodec, valueCodec) between them", n.Op, n.Name, c.Op, c.Name))
		}
	}
	return errs
}

// checkStores reports stores shared across sub-topologies or kinds, and
// stores declared but passed to no stage.
func (t *Topology) checkStores() []error {
	var errs []error
	used := map[string]bool{}
	for _, n := range t.nodes {
		for _, st := range n.Stores {
			used[st.Name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.stores)) {
		if !used[name] {
			errs = append(errs, fmt.Errorf("topology: store %q is declared but no stage uses it: pass it to the Process that reads it, topology.Process(stream, name, fn, store)", name))
		}
	}
	g := graph.New(t.name, t.nodes)
	type use struct {
		sub  int
		kind graph.StoreKind
		node string
	}
	seen := map[string]use{}
	for _, n := range t.nodes {
		for _, st := range n.Stores {
			u := use{g.SubTopologyOfNode(n), st.Kind, n.Name}
			prev, ok := seen[st.Name]
			switch {
			case !ok:
				seen[st.Name] = u
			case prev.kind != u.kind:
				errs = append(errs, fmt.Errorf("topology: store name %q is used by %q and %q for different kinds of store", st.Name, prev.node, u.node))
			case prev.sub != u.sub:
				errs = append(errs, fmt.Errorf("topology: store %q is used by %q and %q in different sub-topologies: a store belongs to one", st.Name, prev.node, u.node))
			}
		}
	}
	return errs
}
