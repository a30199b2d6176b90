package topology

// Grouping: a stream keyed for aggregation, repartitioned through an
// internal topic when its key may have changed, and its aggregations.

import (
	"strings"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/serde"
)

// Grouped is a stream grouped by key: every record of one key is in one
// task, so its aggregations (Count, Reduce, Aggregate, and the windowed
// ones after WindowedBy) are correct whatever happened to the key before.
// Create one with GroupByKey or GroupBy. The zero Grouped is invalid.
type Grouped[K, V any] struct {
	s    Stream[K, V]
	name string
	kc   serde.Codec[K]
	vc   serde.Codec[V]
}

// GroupByKey groups the stream by its records' keys. When a stage before
// it in the same sub-topology may have changed the keys (Map, FlatMap,
// Process), the records go through the internal topic
// "<application id>-<name>-repartition" first, partitioned by key, as
// after Repartition; otherwise they stay where they are and no topic is
// used. name is required either way, so that adding a key-changing stage
// later names the topic it brings in; keep it across releases. kc and vc
// encode the records in the repartition topic.
func GroupByKey[K, V any](s Stream[K, V], name string, kc serde.Codec[K], vc serde.Codec[V]) Grouped[K, V] {
	if !s.valid("group-by-key") {
		return Grouped[K, V]{}
	}
	if !checkGroup(s.t, "group-by-key", name, kc == nil, vc == nil) {
		return Grouped[K, V]{}
	}
	if s.t.keyChanger(s.node) != nil {
		s = Repartition(s, name, kc, vc)
	}
	return Grouped[K, V]{s: s, name: name, kc: kc, vc: vc}
}

// GroupBy groups the stream by a new key, key(k, v), and always goes
// through the internal topic "<application id>-<name>-repartition",
// partitioned by the new key (Kafka Streams' groupBy). kc encodes the new
// key, vc the values, in that topic.
func GroupBy[K, V, K2 any](s Stream[K, V], name string, key func(K, V) K2, kc serde.Codec[K2], vc serde.Codec[V]) Grouped[K2, V] {
	if !s.valid("group-by") {
		return Grouped[K2, V]{}
	}
	ok := checkGroup(s.t, "group-by", name, kc == nil, vc == nil)
	if key == nil {
		s.t.errorf("group-by %q: key function is nil", name)
		ok = false
	}
	if !ok {
		return Grouped[K2, V]{}
	}
	rekeyed := Map(s, func(k K, v V) (K2, V, error) { return key(k, v), v, nil })
	if rekeyed.node != nil {
		rekeyed.node.Op = "select-key"
	}
	return Grouped[K2, V]{s: Repartition(rekeyed, name, kc, vc), name: name, kc: kc, vc: vc}
}

// checkGroup records the problems of a grouping's name and codecs.
func checkGroup(t *Topology, op, name string, noKey, noValue bool) bool {
	ok := true
	if strings.TrimSpace(name) == "" {
		t.errorf("%s: name is empty: it names the repartition topic \"<application id>-<name>-repartition\", which must stay the same across releases", op)
		ok = false
	} else if err := checkTopic(name); err != nil {
		t.errorf("%s: name: %v (it names the repartition topic)", op, err)
		ok = false
	}
	if noKey {
		t.errorf("%s %q: key codec is nil", op, name)
		ok = false
	}
	if noValue {
		t.errorf("%s %q: value codec is nil", op, name)
		ok = false
	}
	return ok
}

// valid reports whether g can be aggregated; a zero Grouped comes from a
// stage whose mistake is already recorded.
func (g Grouped[K, V]) valid() bool { return g.s.t != nil && g.s.node != nil }

// Stream returns the grouped records as a stream (after the repartition
// topic, when there is one).
func (g Grouped[K, V]) Stream() Stream[K, V] { return g.s }

// Count counts the records of each key in a store named name and forwards
// (key, count) for every record.
func (g Grouped[K, V]) Count(name string) Stream[K, int64] {
	if !g.valid() {
		return Stream[K, int64]{}
	}
	return Count(g.s, name, g.kc)
}

// Reduce combines the values of each key, in a store named name: the first
// value of a key is its aggregate, and every later one is combined with it
// by fn. It forwards (key, aggregate) for every record.
func (g Grouped[K, V]) Reduce(name string, fn func(agg, v V) (V, error)) Stream[K, V] {
	if !g.valid() {
		return Stream[K, V]{}
	}
	if fn == nil {
		g.s.t.errorf("reduce %q: function is nil", name)
		return Stream[K, V]{}
	}
	return reduceFirst(g.s, name, g.kc, g.vc, fn)
}

// Aggregate folds the values of each key into an aggregate of type A kept
// in a store named name: init gives a key's first aggregate, add folds
// each record into it. It forwards (key, aggregate) for every record. ac
// encodes the aggregate in the store and its changelog.
func Aggregate[K, V, A any](g Grouped[K, V], name string, ac serde.Codec[A], init func() A, add func(k K, v V, agg A) (A, error)) Stream[K, A] {
	if !g.valid() {
		return Stream[K, A]{}
	}
	if init == nil || add == nil {
		g.s.t.errorf("aggregate %q: initializer and adder must not be nil", name)
		return Stream[K, A]{}
	}
	out := Reduce(g.s, name, g.kc, ac, init, func(acc A, k K, v V) (A, error) { return add(k, v, acc) })
	if out.node != nil {
		out.node.Op = "aggregate"
	}
	return out
}

// reduceFirst is Reduce in which a key's first value is its aggregate.
func reduceFirst[K, V any](s Stream[K, V], name string, kc serde.Codec[K], vc serde.Codec[V], fn func(agg, v V) (V, error)) Stream[K, V] {
	out := Reduce(s, name, kc, vc, nil, func(acc V, _ K, v V) (V, error) { return fn(acc, v) })
	if out.node == nil {
		return out
	}
	// Reduce starts from the zero value; here the first value is kept as
	// it is, which Reduce's store tells apart by the key's absence.
	store := KeyValueStore[K, V]{t: s.t, name: name, kc: kc, vc: vc}
	out.node.Process = func(c *graph.Context, r graph.Record) error {
		ctx := Context[K, V]{c: c}
		k, v := as[K](r.Key), as[V](r.Value)
		acc, ok, err := store.Get(ctx, k)
		if err != nil {
			return err
		}
		if ok {
			if v, err = fn(acc, v); err != nil {
				return err
			}
		}
		if err := store.Put(ctx, k, v); err != nil {
			return err
		}
		r.Value = v
		return c.Forward(r)
	}
	return out
}

// keyChanger returns a stage at or upstream of n, within its
// sub-topology, that may change the key (a source, a repartition topic's
// included, ends the walk), or nil.
func (t *Topology) keyChanger(n *graph.Node) *graph.Node {
	if n.ChangesKey {
		return n
	}
	parents := map[*graph.Node][]*graph.Node{}
	for _, p := range t.nodes {
		for _, c := range p.Children {
			parents[c] = append(parents[c], p)
		}
	}
	return changerAbove(parents, n, map[*graph.Node]bool{})
}

// changerAbove returns a key-changing node upstream of n, or nil.
func changerAbove(parents map[*graph.Node][]*graph.Node, n *graph.Node, seen map[*graph.Node]bool) *graph.Node {
	for _, p := range parents[n] {
		if seen[p] {
			continue
		}
		seen[p] = true
		if p.ChangesKey {
			return p
		}
		if c := changerAbove(parents, p, seen); c != nil {
			return c
		}
	}
	return nil
}
