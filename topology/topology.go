package topology

import (
	"fmt"
	"strings"
	"time"

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
