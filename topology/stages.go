package topology

// The stages that continue a stream: stateless ones, Repartition, Merge
// and Process.

import (
	"strings"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/serde"
)

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
// sub-topology, so they must be co-partitioned (same partition count, and
// keyed alike): a task then sees partition p of every one of them, and the
// runtime assigns all of a task's partitions to one replica, so a count, a
// dedup or a join after a merge sees every record of a key.
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
