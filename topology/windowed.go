package topology

// Windowed aggregations: a grouped stream cut into windows of time, with
// results on every update or only once, when a window closes.

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
)

// Rejection reasons of the windowed stages.
const (
	// ReasonLate: the record arrived after every window it belongs to
	// had closed (window end plus grace, see Windows).
	ReasonLate = wire.ReasonLate
	// ReasonInvalidTimestamp: the record has no timestamp (Kafka's -1) or
	// a negative one, so it belongs to no window (Kafka Streams' default
	// timestamp extractor fails on it; onceflow rejects it visibly).
	ReasonInvalidTimestamp = wire.ReasonInvalidTimestamp
	// ReasonFutureTimestamp: the record is stamped beyond the wall clock
	// plus the allowed clock skew. Stream time cannot reach its window, so
	// the window would stay open, its result unseen, until the wall clock
	// caught up (Kafka Streams would instead close every open window).
	ReasonFutureTimestamp = wire.ReasonFutureTimestamp
)

// WindowedStream is a grouped stream cut into windows, to aggregate per
// key and window. Create one with Grouped.WindowedBy.
type WindowedStream[K, V any] struct {
	g     Grouped[K, V]
	w     Windows
	final bool
}

// WindowedBy cuts the grouped stream into windows.
func (g Grouped[K, V]) WindowedBy(w Windows) WindowedStream[K, V] {
	return WindowedStream[K, V]{g: g, w: w}
}

// EmitFinal emits each window's result once, when the window closes (Kafka
// Streams' suppress(untilWindowCloses), or emit-final), instead of on
// every update. The fact that a window was emitted is stored in the same
// transaction as its result, so each closed window's result is written
// exactly once, across crashes, rebalances and restores. Windows close as
// the stage's stream time moves, that is as records arrive (of any key of
// the task): a partition that receives nothing more holds its last
// windows open.
func (w WindowedStream[K, V]) EmitFinal() WindowedStream[K, V] {
	w.final = true
	return w
}

// Count counts the records of each key and window, in a window store
// named name, and forwards (windowed key, count).
func (w WindowedStream[K, V]) Count(name string) Stream[Windowed[K], int64] {
	return windowStage(w, name, "windowed-count", serde.Int64(),
		func(K, V) (int64, error) { return 1, nil },
		func(_ K, _ V, n int64) (int64, error) { return n + 1, nil },
		func(_ K, a, b int64) (int64, error) { return a + b, nil })
}

// Reduce combines the values of each key and window: a window's first
// value is its aggregate, every later one is combined with it by fn (so
// are two sessions that merge).
func (w WindowedStream[K, V]) Reduce(name string, fn func(agg, v V) (V, error)) Stream[Windowed[K], V] {
	if fn == nil {
		if w.g.valid() {
			w.g.s.t.errorf("windowed-reduce %q: function is nil", name)
		}
		return Stream[Windowed[K], V]{}
	}
	return windowStage(w, name, "windowed-reduce", w.g.vc,
		func(_ K, v V) (V, error) { return v, nil },
		func(_ K, v V, agg V) (V, error) { return fn(agg, v) },
		func(_ K, a, b V) (V, error) { return fn(a, b) })
}

// WindowedAggregate folds the values of each key and window into an
// aggregate of type A, in a window store named name: init gives a
// window's first aggregate, add folds each record into it, and merge
// combines two sessions a record bridges (session windows only; nil
// otherwise is fine). ac encodes the aggregate in the store, its
// changelog and, for the output, wherever To encodes it.
func WindowedAggregate[K, V, A any](w WindowedStream[K, V], name string, ac serde.Codec[A], init func() A, add func(k K, v V, agg A) (A, error), merge func(k K, a, b A) (A, error)) Stream[Windowed[K], A] {
	if init == nil || add == nil {
		if w.g.valid() {
			w.g.s.t.errorf("windowed-aggregate %q: initializer and adder must not be nil", name)
		}
		return Stream[Windowed[K], A]{}
	}
	if merge == nil && w.w.kind == windowSession {
		if w.g.valid() {
			w.g.s.t.errorf("windowed-aggregate %q: session windows need a merger (two sessions merge when a record bridges them)", name)
		}
		return Stream[Windowed[K], A]{}
	}
	return windowStage(w, name, "windowed-aggregate", ac,
		func(k K, v V) (A, error) { return add(k, v, init()) }, add, merge)
}

// windowStage adds a windowed aggregation node and its store.
func windowStage[K, V, A any](w WindowedStream[K, V], name, op string, ac serde.Codec[A],
	first func(K, V) (A, error), add func(K, V, A) (A, error), merge func(K, A, A) (A, error)) Stream[Windowed[K], A] {
	g := w.g
	if !g.valid() || !g.s.valid(op) {
		return Stream[Windowed[K], A]{}
	}
	t := g.s.t
	if strings.TrimSpace(name) == "" {
		checkStageName(t, op, name)
		return Stream[Windowed[K], A]{}
	}
	checkStageName(t, op, name)
	if err := w.w.check(); err != nil {
		t.errorf("%s %q: %v", op, name, err)
	}
	if ac == nil {
		t.errorf("%s %q: aggregate codec is nil", op, name)
		return Stream[Windowed[K], A]{}
	}
	if t.stores == nil {
		t.stores = map[string]bool{}
	}
	if t.stores[name] {
		t.errorf("store %q is declared twice", name)
	}
	t.stores[name] = true
	st := &windowed[K, V, A]{store: name, w: w.w, final: w.final, kc: g.kc, vc: g.vc, ac: ac, first: first, add: add, merge: merge}
	out := stage[K, V, Windowed[K], A](g.s, op, name, false, st.process)
	if out.node == nil {
		return out
	}
	n := out.node
	n.Stores = []graph.Store{{Name: name, Kind: graph.StoreWindow, Retention: w.w.retention}}
	n.Splits = true // closing windows forwards their results: each its own unit
	n.KeyedState = true
	n.Op = op + " [" + w.w.String()
	if w.final {
		n.Op += ", emit final"
	}
	n.Op += "]"
	return out
}

// windowed runs one windowed aggregation: K the record key, V its value,
// A the aggregate.
type windowed[K, V, A any] struct {
	store string
	w     Windows
	final bool
	kc    serde.Codec[K]
	vc    serde.Codec[V]
	ac    serde.Codec[A]
	first func(K, V) (A, error)
	add   func(K, V, A) (A, error)
	merge func(K, A, A) (A, error)
}

// in is the record being aggregated.
type in[K, V any] struct {
	r  graph.Record
	k  K
	v  V
	kb []byte
	ts int64 // milliseconds
}

func (s *windowed[K, V, A]) process(c *graph.Context, r graph.Record) error {
	st := c.State()
	if st == nil {
		return graph.ErrNoState
	}
	rec := in[K, V]{r: r, k: as[K](r.Key), v: as[V](r.Value), ts: r.Timestamp.UnixMilli()}
	if rec.ts < 0 {
		return &graph.Rejection{Reason: ReasonInvalidTimestamp, Detail: fmt.Sprintf("timestamp %d ms: a windowed aggregation needs a timestamp of 0 or more", rec.ts)}
	}
	var err error
	if rec.kb, err = s.kc.Encode(rec.k); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	now, advanced, err := s.advance(st, r)
	if err != nil {
		return err
	}
	switch s.w.kind {
	case windowSession:
		err = s.session(c, st, rec, now)
	case windowSliding:
		err = s.sliding(c, st, rec, now)
	default:
		err = s.timeWindows(c, st, rec, now)
	}
	if err != nil || !advanced {
		return err
	}
	return s.close(c, st, now)
}

// advance moves the stage's stream time with the record's timestamp and
// stores it; it returns the stream time in milliseconds and whether it
// moved. A record stamped beyond the wall clock plus the allowed skew is
// rejected: stream time stops at that bound, so the record's window would
// not close before the wall clock reached it.
func (s *windowed[K, V, A]) advance(st graph.State, r graph.Record) (int64, bool, error) {
	bounded, err := st.ObserveTime(r.Timestamp)
	if err != nil {
		return 0, false, err
	}
	if bounded.Before(r.Timestamp) {
		return 0, false, &graph.Rejection{Reason: ReasonFutureTimestamp, Detail: fmt.Sprintf("timestamp %d ms is %v beyond the latest stream time allowed, %d ms (wall clock plus the allowed clock skew)",
			r.Timestamp.UnixMilli(), r.Timestamp.Sub(bounded), bounded.UnixMilli())}
	}
	b, ok, err := st.Get(s.store, metaStreamTime)
	if err != nil {
		return 0, false, err
	}
	ts := bounded.UnixMilli()
	if ok && len(b) == 8 {
		if prev := readTime(b); prev >= ts {
			return prev, false, nil
		}
	}
	return ts, true, st.Put(s.store, metaStreamTime, appendTime(nil, ts))
}

// late is the rejection of a record all of whose windows are closed.
func (s *windowed[K, V, A]) late(rec in[K, V], now int64) error {
	return &graph.Rejection{Reason: ReasonLate, Detail: fmt.Sprintf("timestamp %d ms: every window of it closed (%v; stream time %d ms)", rec.ts, s.w, now)}
}

// timeWindows adds the record to its tumbling or hopping windows that
// are still open.
func (s *windowed[K, V, A]) timeWindows(c *graph.Context, st graph.State, rec in[K, V], now int64) error {
	size, adv := s.w.size.Milliseconds(), s.w.advance.Milliseconds()
	closeBefore := now - s.w.grace.Milliseconds() // a window ending at or before it is closed
	last := rec.ts - ((rec.ts%adv)+adv)%adv       // the latest window start at or before ts
	var starts []int64
	for start := last; start > rec.ts-size && start >= 0; start -= adv { // no window before the epoch, as in Kafka Streams
		if start+size > closeBefore {
			starts = append(starts, start)
		}
	}
	if len(starts) == 0 {
		return s.late(rec, now)
	}
	for i := len(starts) - 1; i >= 0; i-- {
		if err := s.update(c, st, rec, starts[i], starts[i]+size); err != nil {
			return err
		}
	}
	return nil
}

// update folds the record into one window, creating it when new, and
// forwards the new aggregate unless only final results are emitted.
func (s *windowed[K, V, A]) update(c *graph.Context, st graph.State, rec in[K, V], start, end int64) error {
	dk := windowKey(rec.kb, start, end)
	b, ok, err := st.Get(s.store, dk)
	if err != nil {
		return err
	}
	var agg A
	if ok {
		if agg, err = s.decode(b); err != nil {
			return err
		}
		if agg, err = s.add(rec.k, rec.v, agg); err != nil {
			return err
		}
	} else if agg, err = s.first(rec.k, rec.v); err != nil {
		return err
	}
	return s.put(c, st, rec, dk, !ok, start, end, agg)
}

// put stores a window's aggregate (indexing a new window by its close
// time) and forwards it unless only final results are emitted.
func (s *windowed[K, V, A]) put(c *graph.Context, st graph.State, rec in[K, V], dk []byte, fresh bool, start, end int64, agg A) error {
	ab, err := s.ac.Encode(agg)
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	if err := st.Put(s.store, dk, ab); err != nil {
		return err
	}
	if fresh {
		if err := st.Put(s.store, indexKey(prefixClose, s.closeAt(end), dk), nil); err != nil {
			return err
		}
	}
	if s.final {
		return nil
	}
	return c.Forward(graph.Record{Key: s.windowedKey(rec.k, start, end), Value: agg, Headers: rec.r.Headers, Timestamp: rec.r.Timestamp})
}

func (s *windowed[K, V, A]) windowedKey(k K, start, end int64) Windowed[K] {
	return Windowed[K]{Key: k, Start: msTime(start), End: msTime(end)}
}

func (s *windowed[K, V, A]) decode(b []byte) (A, error) {
	agg, err := s.ac.Decode(b)
	if err != nil {
		return agg, fmt.Errorf("window store %q: stored aggregate: %w", s.store, err)
	}
	return agg, nil
}

// closeAt is when a window ending at end closes: when stream time
// reaches its end plus grace (sessions: plus gap), for a window whose end
// is excluded, and when it passes it, for one whose end is included
// (sliding and session windows).
func (s *windowed[K, V, A]) closeAt(end int64) int64 {
	at := end + s.w.grace.Milliseconds()
	switch s.w.kind {
	case windowSession:
		at += s.w.size.Milliseconds() + 1
	case windowSliding:
		at++
	}
	return at
}

// expireAt is when a closed window's state is deleted: at its close
// unless a longer retention was set.
func (s *windowed[K, V, A]) expireAt(start, end int64) int64 {
	if s.w.retention == 0 {
		return s.closeAt(end)
	}
	if s.w.kind == windowSession {
		return end + s.w.retention.Milliseconds()
	}
	return start + s.w.retention.Milliseconds()
}

// close closes every window whose close time stream time reached:
// forwards its final result (when only final results are emitted),
// removes it from the close index in the same transaction, and deletes it
// or keeps it until its expiry. Then it deletes what expired.
func (s *windowed[K, V, A]) close(c *graph.Context, st graph.State, now int64) error {
	due, err := s.due(st, prefixClose, now)
	if err != nil {
		return err
	}
	for _, idx := range due {
		dk := idx[9:]
		kb, start, end, err := parseWindowKey(dk)
		if err != nil {
			return fmt.Errorf("window store %q: %w", s.store, err)
		}
		if err := st.Delete(s.store, idx); err != nil {
			return err
		}
		if s.final {
			if err := s.emit(c, st, dk, kb, start, end); err != nil {
				return err
			}
		}
		if at := s.expireAt(start, end); at > now {
			err = st.Put(s.store, indexKey(prefixExpire, at, dk), nil)
		} else {
			err = st.Delete(s.store, dk)
		}
		if err != nil {
			return err
		}
	}
	expired, err := s.due(st, prefixExpire, now)
	if err != nil {
		return err
	}
	for _, idx := range expired {
		if err := st.Delete(s.store, idx[9:]); err != nil {
			return err
		}
		if err := st.Delete(s.store, idx); err != nil {
			return err
		}
	}
	return nil
}

// due lists the entries of an index up to now.
func (s *windowed[K, V, A]) due(st graph.State, prefix byte, now int64) ([][]byte, error) {
	var keys [][]byte
	err := st.Range(s.store, []byte{prefix}, indexBound(prefix, now), func(k, _ []byte) bool {
		keys = append(keys, append([]byte(nil), k...))
		return true
	})
	return keys, err
}

// emit forwards a closed window's final result, stamped with its end.
func (s *windowed[K, V, A]) emit(c *graph.Context, st graph.State, dk, kb []byte, start, end int64) error {
	b, ok, err := st.Get(s.store, dk)
	if err != nil || !ok {
		return err
	}
	agg, err := s.decode(b)
	if err != nil {
		return err
	}
	k, err := s.kc.Decode(kb)
	if err != nil {
		return fmt.Errorf("window store %q: stored key: %w", s.store, err)
	}
	wk := s.windowedKey(k, start, end)
	// Failed, the result is rejected as itself (its key and aggregate as
	// the store encodes them, with its bounds), not as the record that
	// closed the window, whose own effects commit.
	as := &graph.RejectedRecord{Key: kb, Value: bytes.Clone(b), Timestamp: msTime(end), Headers: []graph.Header{
		{Key: wire.HeaderRejectedRecord, Value: []byte(wire.RejectedWindowResult)},
		{Key: wire.HeaderWindowStart, Value: strconv.AppendInt(nil, start, 10)},
		{Key: wire.HeaderWindowEnd, Value: strconv.AppendInt(nil, end, 10)},
	}}
	return c.ForwardAloneAs(graph.Record{Key: wk, Value: agg, Timestamp: msTime(end)}, "final result of window "+wk.String(), as)
}

// WithTimestamp sets each record's timestamp to ts(k, v), for the windows
// and stream time after it: event time taken from the value instead of
// the consumed record's timestamp. Outputs carry it too, so the bounds of
// the topics they are written to apply (an output stamped beyond them is
// rejected, reason timestamp-out-of-range), and stream time moves at most
// to the wall clock plus the allowed clock skew (a windowed aggregation
// rejects a record stamped beyond it, reason future-timestamp).
func WithTimestamp[K, V any](s Stream[K, V], ts func(K, V) time.Time) Stream[K, V] {
	return stage[K, V, K, V](s, "timestamp", "", ts == nil, func(c *graph.Context, r graph.Record) error {
		r.Timestamp = ts(as[K](r.Key), as[V](r.Value))
		return c.Forward(r)
	})
}
