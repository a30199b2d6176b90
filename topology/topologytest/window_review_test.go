package topologytest_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// storeLen counts the entries of the window store "views-per-window".
func (w *windowed) storeLen() int {
	w.t.Helper()
	n, err := w.d.StoreLen("views-per-window", 0)
	if err != nil {
		w.t.Fatal(err)
	}
	return n
}

// A record stamped beyond the wall clock plus the allowed skew would open
// a window that stream time cannot reach, so its result would wait, unseen,
// until the wall clock catches up (for ever, for a year-2100 stamp): it is
// rejected with its reason and leaves no state. A record stamped far in
// the past is late.
func TestWindowRejectsFarFutureRecords(t *testing.T) {
	w := newWindowed(t, topology.TumblingWindows(time.Hour), true)
	wall := 48 * time.Hour // newWindowed's wall clock, from t0; the skew allowed is 1 hour
	w.pipe("u1", wall)
	before := w.storeLen()
	w.pipe("u1", wall+5*24*time.Hour)
	w.expectRejected("five days ahead", topology.ReasonFutureTimestamp)
	if n := w.storeLen(); n != before {
		t.Errorf("%d store entries after the rejected record, want %d", n, before)
	}
	w.pipe("u1", wall+time.Hour) // within the skew: accepted, closes [wall, wall+1h)
	w.expectRejected("within the skew")
	w.expect("closed", "u1[48h0m0s,49h0m0s]=1")
	w.pipe("u2", -wall) // 2025-12-30: long closed
	w.expectRejected("far past", topology.ReasonLate)
}

// A failure on the path of one window's final result (here a map that
// refuses one value) rejects that result alone: before, it failed the
// record whose stream time closed the window, which rolled the close back,
// so every later record that moved stream time failed the same way and no
// window of the task closed again.
func TestWindowFinalResultFailureIsContained(t *testing.T) {
	tp := topology.New("views")
	in := topology.Source(tp, "views", serde.String(), serde.String())
	counts := topology.GroupByKey(in, "by-user", serde.String(), serde.String()).
		WindowedBy(topology.TumblingWindows(time.Hour)).EmitFinal().Count("views-per-window")
	checked := topology.MapValues(counts, func(n int64) (int64, error) {
		if n == 2 {
			return 0, errors.New("two is refused")
		}
		return n, nil
	})
	topology.To(checked, "counts", topology.WindowedCodec(serde.String()), serde.Int64())
	d := newDriver(t, tp, topologytest.Config{WallClock: t0.Add(48 * time.Hour)})
	w := &windowed{t: t, d: d,
		in:  topologytest.Input(d, "views", serde.String(), serde.String()),
		out: topologytest.Output(d, "counts", topology.WindowedCodec(serde.String()), serde.Int64())}
	w.pipe("u1", 0)
	w.pipe("u1", time.Minute)
	w.pipe("u2", 10*time.Minute)
	w.pipe("u2", time.Hour) // closes [0, 1h): u1's result fails, u2's goes out
	w.expect("first close", "u2[0s,1h0m0s]=1")
	w.expectRejected("u1's result", topologytest.ReasonProcessingError)
	w.pipe("u2", 2*time.Hour)
	w.pipe("u2", 3*time.Hour)
	w.expect("later closes", "u2[1h0m0s,2h0m0s]=1", "u2[2h0m0s,3h0m0s]=1")
	w.expectRejected("later records")
	// Stream time and [3h, 4h) with its close entry: nothing of the
	// refused window is left.
	if n := w.storeLen(); n != 3 {
		t.Errorf("%d store entries, want 3", n)
	}
}

// A replayed event deduplicated before a window is not counted again.
func TestWindowAfterDedup(t *testing.T) {
	tp := topology.New("views")
	in := topology.Source(tp, "views", serde.String(), serde.String())
	unique := topology.Dedup(in, "seen", topology.EventIDFunc(func(_, v string) string { return v }), 24*time.Hour)
	counts := topology.GroupByKey(unique, "by-user", serde.String(), serde.String()).
		WindowedBy(topology.TumblingWindows(time.Hour)).Count("views-per-window")
	topology.To(counts, "counts", topology.WindowedCodec(serde.String()), serde.Int64())
	d := newDriver(t, tp, topologytest.Config{WallClock: t0.Add(48 * time.Hour)})
	in2 := topologytest.Input(d, "views", serde.String(), serde.String())
	out := topologytest.Output(d, "counts", topology.WindowedCodec(serde.String()), serde.Int64())
	for _, id := range []string{"e1", "e2", "e1", "e2", "e3"} {
		if err := in2.PipeRecord(topologytest.Record[string, string]{Key: "u1", Value: id, Timestamp: t0.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := out.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range rs {
		got = append(got, r.Value)
	}
	if want := []int64{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	if got := reasons(d.Rejections()); !slices.Equal(got, []string{"duplicate@seen", "duplicate@seen"}) {
		t.Errorf("rejections %q, want two duplicates", got)
	}
}

// A record bridging two sessions leaves one session and one close entry;
// a record inside an open session changes only its aggregate; a record
// beyond grace is late; closed sessions leave nothing behind.
func TestSessionStateAfterMerges(t *testing.T) {
	w := newWindowed(t, topology.SessionWindows(5*time.Minute).WithGrace(30*time.Minute), false)
	m := time.Minute
	w.pipe("u1", 0)
	w.pipe("u1", 10*m)
	w.pipe("u1", 20*m)
	if n := w.storeLen(); n != 7 { // stream time + 3 sessions with their close entries
		t.Errorf("%d store entries with three sessions, want 7", n)
	}
	w.pipe("u1", 15*m) // bridges [10m] and [20m]
	w.pipe("u1", 5*m)  // bridges [0] and [10m, 20m]
	w.pipe("u1", 12*m) // inside [0, 20m]
	w.read()
	if n := w.storeLen(); n != 3 {
		t.Errorf("%d store entries after the merges, want 3 (stream time, one session, its close entry)", n)
	}
	w.pipe("u2", 60*m) // [0, 20m] closes at 20m + 5m + 30m
	w.expect("u2", "u2[1h0m0s,1h0m0s]=1")
	w.pipe("u1", 19*m) // within gap of the closed session, beyond grace
	w.expectRejected("beyond grace", topology.ReasonLate)
	if n := w.storeLen(); n != 3 {
		t.Errorf("%d store entries after the close, want 3 (stream time, u2's session, its close entry)", n)
	}
	w.pipe("u1", 0) // re-read the merged session: one, of six records
	w.expectRejected("long closed", topology.ReasonLate)
}

// Hopping windows whose size is not a multiple of the advance: a record
// is in every window [start, start+size) with start a multiple of the
// advance, start <= t < start+size.
func TestHoppingSizeNotAMultipleOfAdvance(t *testing.T) {
	w := newWindowed(t, topology.HoppingWindows(10*time.Minute, 3*time.Minute), false)
	w.pipe("u1", 5*time.Minute) // t0 is a multiple of 3 minutes since the epoch
	w.expect("windows of 5m", "u1[-3m0s,7m0s]=1", "u1[0s,10m0s]=1", "u1[3m0s,13m0s]=1")
	w.pipe("u1", 9*time.Minute)
	w.expect("windows of 9m", "u1[0s,10m0s]=2", "u1[3m0s,13m0s]=2", "u1[6m0s,16m0s]=1", "u1[9m0s,19m0s]=1")
}

// Kafka Streams creates no window starting before the epoch: a record
// stamped 1 minute after it is in [0, 10m) only, not in [-5m, 5m).
func TestHoppingNoWindowBeforeTheEpoch(t *testing.T) {
	tp := topology.New("views")
	in := topology.Source(tp, "views", serde.String(), serde.String())
	counts := topology.GroupByKey(in, "by-user", serde.String(), serde.String()).
		WindowedBy(topology.HoppingWindows(10*time.Minute, 5*time.Minute)).Count("views-per-window")
	topology.To(counts, "counts", topology.WindowedCodec(serde.String()), serde.Int64())
	d := newDriver(t, tp, topologytest.Config{WallClock: t0})
	in2 := topologytest.Input(d, "views", serde.String(), serde.String())
	out := topologytest.Output(d, "counts", topology.WindowedCodec(serde.String()), serde.Int64())
	if err := in2.PipeRecord(topologytest.Record[string, string]{Key: "u1", Value: "page", Timestamp: time.UnixMilli(60_000)}); err != nil {
		t.Fatal(err)
	}
	rs, err := out.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("[%d,%d]=%d", r.Key.Start.UnixMilli(), r.Key.End.UnixMilli(), r.Value))
	}
	if want := []string{"[0,600000]=1"}; !slices.Equal(got, want) {
		t.Errorf("windows %q, want %q", got, want)
	}
}

// Sliding windows with records at one timestamp: one window ends there
// holding them all, and the window after them holds what follows.
func TestSlidingIdenticalTimestamps(t *testing.T) {
	w := newWindowed(t, topology.SlidingWindows(10*time.Second), true)
	s := time.Second
	w.pipe("u1", 10*s)
	w.pipe("u1", 10*s)
	w.pipe("u1", 10*s)
	w.pipe("u1", 15*s)
	w.pipe("u1", 15*s)
	w.pipe("u1", time.Minute)
	w.expect("closed", "u1[0s,10s]=3", "u1[5s,15s]=5", "u1[10.001s,20.001s]=2")
	w.pipe("u1", 2*time.Minute)
	w.expect("the lone record", "u1[50s,1m0s]=1")
	// Stream time, the window of the record at 2m with its close entry,
	// the record's values with their expiry entry.
	if n := w.storeLen(); n != 5 {
		t.Errorf("%d store entries, want 5", n)
	}
}

// A punctuator's records rejected by a gate after it are rejected one by
// one, named after the punctuator; the others go out.
func TestPunctuatorForwardsIntoRejectingGate(t *testing.T) {
	tp := topology.New("buffer")
	in := topology.Source(tp, "in", serde.String(), serde.Int64())
	seen := topology.Store(tp, "seen", serde.String(), serde.Int64())
	out := topology.Process(in, "buffer", func(ctx topology.Context[string, int64], r topology.Record[string, int64]) error {
		return seen.Put(ctx, r.Key, r.Value)
	}, seen)
	topology.Punctuate(out, topology.WallClockTime, time.Minute, func(ctx topology.Context[string, int64], at time.Time) error {
		for _, k := range []string{"a", "b", "a"} {
			if err := ctx.Forward(topology.Record[string, int64]{Key: k, Value: 1, Timestamp: at}); err != nil {
				return err
			}
		}
		return nil
	})
	once := topology.Dedup(out, "once", topology.EventIDFunc(func(k string, _ int64) string { return k }), time.Hour)
	topology.To(once, "sums", serde.String(), serde.Int64())
	d := newDriver(t, tp, topologytest.Config{WallClock: t0})
	if err := topologytest.Input(d, "in", serde.String(), serde.Int64()).PipeRecord(topologytest.Record[string, int64]{Key: "x", Value: 1, Timestamp: t0}); err != nil {
		t.Fatal(err)
	}
	if err := d.AdvanceWallClock(time.Minute); err != nil {
		t.Fatal(err)
	}
	rs, err := topologytest.Output(d, "sums", serde.String(), serde.Int64()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rs {
		keys = append(keys, r.Key)
	}
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("outputs %q, want a and b", keys)
	}
	rej := d.Rejections()
	if len(rej) != 1 || rej[0].Reason != "duplicate" || rej[0].Source != "punctuator/buffer/0_0" {
		t.Errorf("rejections %+v, want one duplicate from punctuator/buffer/0_0", rej)
	}
	if errs := d.PunctuationErrors(); len(errs) != 0 {
		t.Errorf("punctuation errors %v", errs)
	}
}

// A gate after a window that rejects one update rejects that update only
// (the unit of rejection is the record in flight): the window stage's own
// state, like a Process stage's, keeps the record, and the next update
// counts it. A gate before the window is how a record is kept out of it
// (TestWindowAfterDedup).
func TestWindowUpdateRejectedAfterTheWindow(t *testing.T) {
	tp := topology.New("views")
	in := topology.Source(tp, "views", serde.String(), serde.String())
	counts := topology.GroupByKey(in, "by-user", serde.String(), serde.String()).
		WindowedBy(topology.TumblingWindows(time.Hour)).Count("views-per-window")
	once := topology.Dedup(counts, "once", topology.EventIDFunc(func(k topology.Windowed[string], n int64) string {
		if n == 3 {
			return "1" // the third update repeats the first's id
		}
		return fmt.Sprint(n)
	}), time.Hour)
	topology.To(once, "counts", topology.WindowedCodec(serde.String()), serde.Int64())
	d := newDriver(t, tp, topologytest.Config{WallClock: t0.Add(48 * time.Hour)})
	w := &windowed{t: t, d: d,
		in:  topologytest.Input(d, "views", serde.String(), serde.String()),
		out: topologytest.Output(d, "counts", topology.WindowedCodec(serde.String()), serde.Int64())}
	w.pipe("u1", 0)
	w.pipe("u1", time.Minute)
	w.pipe("u1", 2*time.Minute)
	w.pipe("u1", 3*time.Minute)
	w.expect("updates", "u1[0s,1h0m0s]=1", "u1[0s,1h0m0s]=2", "u1[0s,1h0m0s]=4")
	if got := reasons(d.Rejections()); !slices.Equal(got, []string{"duplicate@once"}) {
		t.Errorf("rejections %q, want the third update's", got)
	}
}

// A window's final result that fails is rejected as itself, not as the
// input record whose stream time closed the window: that record's own
// effects committed (it is counted in its own window), so replaying the
// rejected record it would count twice. The rejected record holds the
// window's key and aggregate as its store encodes them, marked as a window
// result with the window's bounds.
func TestFailedWindowResultIsRejectedAsItself(t *testing.T) {
	tp := topology.New("views")
	in := topology.Source(tp, "views", serde.String(), serde.String())
	counts := topology.GroupByKey(in, "by-user", serde.String(), serde.String()).
		WindowedBy(topology.TumblingWindows(time.Hour)).EmitFinal().Count("views-per-window")
	checked := topology.MapValues(counts, func(n int64) (int64, error) {
		if n == 2 {
			return 0, errors.New("two is refused")
		}
		return n, nil
	})
	topology.To(checked, "counts", topology.WindowedCodec(serde.String()), serde.Int64())
	d := newDriver(t, tp, topologytest.Config{WallClock: t0.Add(48 * time.Hour)})
	w := &windowed{t: t, d: d,
		in:  topologytest.Input(d, "views", serde.String(), serde.String()),
		out: topologytest.Output(d, "counts", topology.WindowedCodec(serde.String()), serde.Int64())}
	w.pipe("u1", 0)
	w.pipe("u1", time.Minute)
	w.pipe("u2", time.Hour) // closes [0, 1h): u1's result (2) fails
	rs := d.Rejections()
	if len(rs) != 1 {
		t.Fatalf("%d rejections, want 1: %+v", len(rs), rs)
	}
	r := rs[0]
	agg, err := serde.Int64().Encode(2)
	if err != nil {
		t.Fatal(err)
	}
	kind, _ := r.Headers.Get(topologytest.HeaderRejectedRecord)
	start, _ := r.Headers.Get(topologytest.HeaderWindowStart)
	end, _ := r.Headers.Get(topologytest.HeaderWindowEnd)
	got := fmt.Sprintf("key=%q value=%x %s=%q start=%s end=%s", r.Key, r.Value, topologytest.HeaderRejectedRecord, kind, start, end)
	want := fmt.Sprintf("key=%q value=%x %s=%q start=%d end=%d", "u1", agg, topologytest.HeaderRejectedRecord, "window-result", t0.UnixMilli(), t0.Add(time.Hour).UnixMilli())
	if got != want {
		t.Errorf("rejected record:\n got  %s\n want %s", got, want)
	}
	w.pipe("u2", 2*time.Hour) // closes [1h, 2h): u2's own record counted there
	w.expect("u2's window", "u2[1h0m0s,2h0m0s]=1")
}
