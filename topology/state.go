package topology

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
)

// StoreRef is a store a Process function declares it uses.
type StoreRef interface {
	spec() graph.Store
	owner() *Topology
}

// StateContext is what store methods need from a Process context; every
// Context[K, V] is one.
type StateContext interface {
	state(store string) (graph.State, error)
}

// state returns the task's state for store, which the stage running now
// must have declared.
func (c Context[K, V]) state(store string) (graph.State, error) {
	n := c.c.Node()
	if !slices.ContainsFunc(n.Stores, func(s graph.Store) bool { return s.Name == store }) {
		return nil, fmt.Errorf("%w: store %q is used by %s %q, which does not declare it: pass it to topology.Process(stream, %q, fn, store)", ErrUndeclaredStore, store, n.Op, n.Name, n.Name)
	}
	st := c.c.State()
	if st == nil {
		return nil, graph.ErrNoState
	}
	return st, nil
}

// ErrUndeclaredStore is returned by a store method called from a stage that
// did not declare the store. It is a mistake in the topology: not
// retryable.
var ErrUndeclaredStore = errors.New("topology: undeclared store")

// KeyValueStore is a typed key-value store, local to each task (one per
// partition) and backed by a compacted changelog topic
// "<application id>-<store>-changelog" written in the same transaction as
// the outputs.
type KeyValueStore[K, V any] struct {
	t    *Topology
	name string
	kc   serde.Codec[K]
	vc   serde.Codec[V]
}

// Store declares a key-value store named name. Pass it to the Process
// functions that use it.
func Store[K, V any](t *Topology, name string, kc serde.Codec[K], vc serde.Codec[V]) KeyValueStore[K, V] {
	if t == nil {
		return KeyValueStore[K, V]{}
	}
	return declareStore(t, "store", name, kc, vc)
}

// declareStore declares a key-value store for op (Store, or a stage that
// keeps one), whose errors name op.
func declareStore[K, V any](t *Topology, op, name string, kc serde.Codec[K], vc serde.Codec[V]) KeyValueStore[K, V] {
	checkStageName(t, op, name)
	if kc == nil || vc == nil {
		t.errorf("%s %q: codecs must not be nil", op, name)
	}
	if t.stores == nil {
		t.stores = map[string]bool{}
	}
	if t.stores[name] {
		t.errorf("store %q is declared twice", name)
	}
	t.stores[name] = true
	return KeyValueStore[K, V]{t: t, name: name, kc: kc, vc: vc}
}

func (s KeyValueStore[K, V]) spec() graph.Store {
	return graph.Store{Name: s.name, Kind: graph.StoreKeyValue}
}
func (s KeyValueStore[K, V]) owner() *Topology { return s.t }

// Name returns the store's name.
func (s KeyValueStore[K, V]) Name() string { return s.name }

// KeyCodec returns the codec of the store's keys.
func (s KeyValueStore[K, V]) KeyCodec() serde.Codec[K] { return s.kc }

// ValueCodec returns the codec of the store's values.
func (s KeyValueStore[K, V]) ValueCodec() serde.Codec[V] { return s.vc }

// Get reads k, seeing this transaction's own writes.
func (s KeyValueStore[K, V]) Get(ctx StateContext, k K) (V, bool, error) {
	var zero V
	st, err := ctx.state(s.name)
	if err != nil {
		return zero, false, err
	}
	kb, err := s.kc.Encode(k)
	if err != nil {
		return zero, false, fmt.Errorf("store %q: key: %w", s.name, err)
	}
	b, ok, err := st.Get(s.name, kb)
	if err != nil || !ok {
		return zero, false, err
	}
	v, err := s.vc.Decode(b)
	if err != nil {
		return zero, false, fmt.Errorf("store %q: stored value: %w", s.name, err)
	}
	return v, true, nil
}

// Put writes k.
func (s KeyValueStore[K, V]) Put(ctx StateContext, k K, v V) error {
	st, err := ctx.state(s.name)
	if err != nil {
		return err
	}
	kb, err := s.kc.Encode(k)
	if err != nil {
		return fmt.Errorf("store %q: key: %w", s.name, err)
	}
	vb, err := s.vc.Encode(v)
	if err != nil {
		return fmt.Errorf("store %q: value: %w", s.name, err)
	}
	return st.Put(s.name, kb, vb)
}

// Delete removes k.
func (s KeyValueStore[K, V]) Delete(ctx StateContext, k K) error {
	st, err := ctx.state(s.name)
	if err != nil {
		return err
	}
	kb, err := s.kc.Encode(k)
	if err != nil {
		return fmt.Errorf("store %q: key: %w", s.name, err)
	}
	return st.Delete(s.name, kb)
}

// Range calls fn for every entry of the task's store in key-byte order
// until fn returns false.
func (s KeyValueStore[K, V]) Range(ctx StateContext, fn func(K, V) bool) error {
	st, err := ctx.state(s.name)
	if err != nil {
		return err
	}
	var derr error
	err = st.Range(s.name, nil, nil, func(kb, vb []byte) bool {
		k, err := s.kc.Decode(kb)
		if err != nil {
			derr = fmt.Errorf("store %q: stored key: %w", s.name, err)
			return false
		}
		v, err := s.vc.Decode(vb)
		if err != nil {
			derr = fmt.Errorf("store %q: stored value: %w", s.name, err)
			return false
		}
		return fn(k, v)
	})
	return errors.Join(err, derr)
}

// EventID says where a record's logical event id comes from.
type EventID struct {
	describe string
	extract  func(in *graph.Input, key, value any) ([]byte, bool)
}

// EventIDHeader takes the event id from a header of the consumed record.
func EventIDHeader(name string) EventID {
	return EventID{describe: "header " + strconv.Quote(name), extract: func(in *graph.Input, _, _ any) ([]byte, bool) {
		v, ok := headersOf(in.Headers).Get(name)
		return v, ok && len(v) > 0
	}}
}

// EventIDFunc takes the event id from the record itself.
func EventIDFunc[K, V any](fn func(K, V) string) EventID {
	return EventID{describe: "function", extract: func(_ *graph.Input, k, v any) ([]byte, bool) {
		if fn == nil {
			return nil, false
		}
		id := fn(as[K](k), as[V](v))
		return []byte(id), id != ""
	}}
}

// Dedup rejects a logical event seen before in the same task within
// retention (by event time, the consumed record's timestamp): the same
// event id with the same payload (the consumed value's SHA-256) is rejected
// as a duplicate, with a different payload as a conflict. Both go to the
// rejected-records topic. Records without an event id are rejected as
// processing errors.
//
// Dedup is per task: duplicates must land on the same partition, which
// holds when the source topic is keyed by something the duplicates share
// (the entity, the event id). Where it is keyed otherwise, repartition by
// event id first.
//
// name names the gate and its store, whose changelog topic is
// "<application id>-<name>-changelog". Keep it across releases: state is
// bound to it, not to the gate's place in the topology.
func Dedup[K, V any](s Stream[K, V], name string, id EventID, retention time.Duration) Stream[K, V] {
	if s.valid("dedup") {
		checkStageName(s.t, "dedup", name)
	}
	if s.valid("dedup") && id.extract == nil {
		s.t.errorf("dedup %q: no event id given (use EventIDHeader or EventIDFunc)", name)
	}
	if s.valid("dedup") && retention <= 0 {
		s.t.errorf("dedup %q: retention %v must be positive", name, retention)
	}
	out := stage[K, V, K, V](s, "dedup", name, false, nil)
	if out.node == nil {
		return out
	}
	n := out.node
	n.Stores = []graph.Store{{Name: n.Name, Kind: graph.StoreDedup, Retention: retention}}
	n.Process = func(c *graph.Context, r graph.Record) error {
		st := c.State()
		if st == nil {
			return graph.ErrNoState
		}
		in := c.Input()
		eid, ok := id.extract(in, r.Key, r.Value)
		if !ok {
			return fmt.Errorf("no event id (%s)", id.describe)
		}
		res, err := st.Dedup(n.Name, eid, sha256.Sum256(in.Value), in.Timestamp)
		if err != nil {
			return err
		}
		switch res {
		case graph.DedupDuplicate:
			return &graph.Rejection{Reason: wire.ReasonDuplicate, Detail: "event id " + strconv.Quote(string(eid)) + " seen before"}
		case graph.DedupConflict:
			return &graph.Rejection{Reason: wire.ReasonConflict, Detail: "event id " + strconv.Quote(string(eid)) + " seen before with a different payload"}
		}
		return c.Forward(r)
	}
	return out
}

// LatestVersion rejects, per entity, an update whose version is not newer
// than the last one accepted (reason stale). fn returns the entity key and
// the version (a sequence or aggregate version, not a timestamp). Entities
// must be partitioned like the source topic.
//
// name names the gate and its store, as for Dedup.
func LatestVersion[K, V any](s Stream[K, V], name string, fn func(K, V) (entity string, version uint64)) Stream[K, V] {
	if s.valid("latest-version") {
		checkStageName(s.t, "latest-version", name)
	}
	out := stage[K, V, K, V](s, "latest-version", name, fn == nil, nil)
	if out.node == nil {
		return out
	}
	n := out.node
	n.Stores = []graph.Store{{Name: n.Name, Kind: graph.StoreVersion}}
	n.Process = func(c *graph.Context, r graph.Record) error {
		st := c.State()
		if st == nil {
			return graph.ErrNoState
		}
		entity, version := fn(as[K](r.Key), as[V](r.Value))
		key := []byte(entity)
		b, ok, err := st.Get(n.Name, key)
		if err != nil {
			return err
		}
		if ok {
			last, err := decodeVersion(b)
			if err != nil {
				return err
			}
			if version <= last {
				return &graph.Rejection{Reason: wire.ReasonStale, Detail: fmt.Sprintf("entity %q version %d, last applied %d", entity, version, last)}
			}
		}
		if err := st.Put(n.Name, key, binary.BigEndian.AppendUint64(nil, version)); err != nil {
			return err
		}
		return c.Forward(r)
	}
	return out
}

// checkStageName records an error for a stateful stage without a usable
// name; its store and changelog topic are named after it. The stage is
// still added, so what follows it is checked too.
func checkStageName(t *Topology, op, name string) {
	if strings.TrimSpace(name) == "" {
		t.errorf("%s: name is empty: a stateful stage needs a name that stays the same across releases (its state and changelog are bound to it)", op)
	} else if err := checkName(name); err != nil {
		t.errorf("%s %q: %v (it names the changelog topic \"<application id>-%s-changelog\")", op, name, err, name)
	}
}

// decodeVersion reads a version store value: 8 bytes, big-endian.
func decodeVersion(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("version store value has %d bytes, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// Reduce folds the records of each key into an aggregate kept in a store
// named name, and forwards (key, new aggregate) for every record.
func Reduce[K, V, A any](s Stream[K, V], name string, kc serde.Codec[K], ac serde.Codec[A], init func() A, fn func(acc A, k K, v V) (A, error)) Stream[K, A] {
	if !s.valid("reduce") {
		return Stream[K, A]{}
	}
	if strings.TrimSpace(name) == "" {
		checkStageName(s.t, "reduce", name)
		return Stream[K, A]{}
	}
	store := declareStore(s.t, "reduce", name, kc, ac)
	out := Process(s, name, func(ctx Context[K, A], r Record[K, V]) error {
		acc, ok, err := store.Get(ctx, r.Key)
		if err != nil {
			return err
		}
		if !ok && init != nil {
			acc = init()
		}
		if acc, err = fn(acc, r.Key, r.Value); err != nil {
			return err
		}
		if err := store.Put(ctx, r.Key, acc); err != nil {
			return err
		}
		return ctx.Forward(Record[K, A]{Key: r.Key, Value: acc, Headers: r.Headers, Timestamp: r.Timestamp})
	}, store)
	if out.node != nil {
		// One record in, one out, same key: not a split, not a key change.
		out.node.Op = "reduce"
		out.node.Splits = false
		out.node.ChangesKey = false
		out.node.KeyedState = true
	}
	return out
}

// Count counts the records of each key.
func Count[K, V any](s Stream[K, V], name string, kc serde.Codec[K]) Stream[K, int64] {
	return Reduce(s, name, kc, serde.Int64(), nil, func(acc int64, _ K, _ V) (int64, error) { return acc + 1, nil })
}

// Sum adds up value(v) per key.
func Sum[K, V any](s Stream[K, V], name string, kc serde.Codec[K], value func(V) int64) Stream[K, int64] {
	if value == nil {
		if s.valid("sum") {
			s.t.errorf("sum %q: value function is nil", name)
		}
		return Stream[K, int64]{}
	}
	return Reduce(s, name, kc, serde.Int64(), nil, func(acc int64, _ K, v V) (int64, error) { return acc + value(v), nil })
}
