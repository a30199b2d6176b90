package topologytest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// t0 is the start of the windows' time in these tests, a whole day.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// windowed drives a windowed count of views per user.
type windowed struct {
	t   *testing.T
	d   *topologytest.Driver
	in  *topologytest.InputTopic[string, string]
	out *topologytest.OutputTopic[topology.Windowed[string], int64]
}

// newWindowed counts per user in w, emitting every update or final
// results only.
func newWindowed(t *testing.T, w topology.Windows, final bool) *windowed {
	tp := topology.New("views")
	in := topology.Source(tp, "views", serde.String(), serde.String())
	ws := topology.GroupByKey(in, "by-user", serde.String(), serde.String()).WindowedBy(w)
	if final {
		ws = ws.EmitFinal()
	}
	topology.To(ws.Count("views-per-window"), "counts", topology.WindowedCodec(serde.String()), serde.Int64())
	d := newDriver(t, tp, topologytest.Config{WallClock: t0.Add(48 * time.Hour)})
	return &windowed{t: t, d: d,
		in:  topologytest.Input(d, "views", serde.String(), serde.String()),
		out: topologytest.Output(d, "counts", topology.WindowedCodec(serde.String()), serde.Int64())}
}

// pipe sends a view of user at t0 + at.
func (w *windowed) pipe(user string, at time.Duration) {
	w.t.Helper()
	if err := w.in.PipeRecord(topologytest.Record[string, string]{Key: user, Value: "page", Timestamp: t0.Add(at)}); err != nil {
		w.t.Fatal(err)
	}
}

// read returns the outputs since the last read as "user[start,end]=n",
// times as offsets from t0.
func (w *windowed) read() []string {
	w.t.Helper()
	rs, err := w.out.ReadAll()
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s[%v,%v]=%d", r.Key.Key, r.Key.Start.Sub(t0), r.Key.End.Sub(t0), r.Value))
	}
	return out
}

// rejected returns the reasons of the records rejected since the last
// call.
func (w *windowed) rejected() []string {
	var out []string
	for _, r := range w.d.Rejections() {
		out = append(out, r.Reason)
	}
	return out
}

func (w *windowed) expect(what string, want ...string) {
	w.t.Helper()
	if got := w.read(); !slices.Equal(got, want) {
		w.t.Errorf("%s: outputs %q, want %q", what, got, want)
	}
}

func (w *windowed) expectRejected(what string, want ...string) {
	w.t.Helper()
	if got := w.rejected(); !slices.Equal(got, want) {
		w.t.Errorf("%s: rejections %q, want %q", what, got, want)
	}
}

// Tumbling windows are [start, end): a record at the end belongs to the
// next window. Every update is emitted.
func TestTumblingBoundaries(t *testing.T) {
	w := newWindowed(t, topology.TumblingWindows(time.Hour), false)
	w.pipe("u1", 0)
	w.pipe("u1", time.Hour-time.Millisecond)
	w.pipe("u1", time.Hour)
	w.pipe("u2", 30*time.Minute) // out of order, grace 0, window still open closed: it ended at stream time
	w.expect("updates", "u1[0s,1h0m0s]=1", "u1[0s,1h0m0s]=2", "u1[1h0m0s,2h0m0s]=1")
	w.expectRejected("a record for a window that ended at stream time", topology.ReasonLate)
}

// A record later than its window's end plus grace is rejected as late,
// visibly; one within grace is counted.
func TestTumblingGrace(t *testing.T) {
	w := newWindowed(t, topology.TumblingWindows(time.Hour).WithGrace(5*time.Minute), false)
	w.pipe("u1", 10*time.Minute)
	w.pipe("u1", 64*time.Minute)
	w.pipe("u1", 50*time.Minute) // out of order, within grace: the first window is open until 1h05m
	w.pipe("u1", 65*time.Minute) // stream time reaches 1h05m: the first window closes
	w.pipe("u1", 59*time.Minute) // late
	w.expect("within grace", "u1[0s,1h0m0s]=1", "u1[1h0m0s,2h0m0s]=1", "u1[0s,1h0m0s]=2", "u1[1h0m0s,2h0m0s]=2")
	w.expectRejected("beyond grace", topology.ReasonLate)
}

// With EmitFinal each window's result comes once, when it closes, with
// the records within grace in it; empty windows emit nothing, late records
// are rejected and change nothing already emitted.
func TestTumblingEmitFinal(t *testing.T) {
	w := newWindowed(t, topology.TumblingWindows(time.Hour).WithGrace(5*time.Minute), true)
	w.pipe("u1", 10*time.Minute)
	w.pipe("u2", 20*time.Minute)
	w.pipe("u1", 64*time.Minute)
	w.pipe("u1", 50*time.Minute) // within grace
	w.expect("before any window closes")
	w.pipe("u3", 65*time.Minute) // closes [0, 1h)
	w.expect("first close", "u1[0s,1h0m0s]=2", "u2[0s,1h0m0s]=1")
	w.pipe("u1", 59*time.Minute) // late: its window was emitted
	w.pipe("u2", 70*time.Minute)
	w.expectRejected("late after emission", topology.ReasonLate)
	w.pipe("u1", 5*time.Hour+5*time.Minute) // closes [1h, 2h); [2h, 5h) had no records
	w.expect("second close", "u1[1h0m0s,2h0m0s]=1", "u2[1h0m0s,2h0m0s]=1", "u3[1h0m0s,2h0m0s]=1")
	w.pipe("u1", 5*time.Hour+6*time.Minute)
	w.expect("nothing closes twice")
}

// A hopping window record is in size/advance windows; late for some of
// them it updates the others and is not rejected.
func TestHopping(t *testing.T) {
	w := newWindowed(t, topology.HoppingWindows(10*time.Minute, 5*time.Minute), false)
	w.pipe("u1", 7*time.Minute)
	w.pipe("u1", 12*time.Minute)
	w.pipe("u1", 8*time.Minute) // [0,10m) closed at stream time 12m, [5m,15m) open
	w.pipe("u1", 4*time.Minute) // [0,10m) only, closed: late
	w.expect("hops",
		"u1[0s,10m0s]=1", "u1[5m0s,15m0s]=1",
		"u1[5m0s,15m0s]=2", "u1[10m0s,20m0s]=1",
		"u1[5m0s,15m0s]=3")
	w.expectRejected("late for all its windows", topology.ReasonLate)
}

// Sliding windows follow KIP-450: a window ends at each record and one
// starts just after each record that another follows within the time
// difference; an out-of-order record updates every window it is in and
// creates the window after it.
func TestSliding(t *testing.T) {
	w := newWindowed(t, topology.SlidingWindows(10*time.Second).WithGrace(20*time.Second), false)
	s := time.Second
	w.pipe("u1", 10*s)
	w.expect("first record", "u1[0s,10s]=1")
	w.pipe("u1", 15*s)
	w.expect("second record", "u1[5s,15s]=2", "u1[10.001s,20.001s]=1")
	w.pipe("u1", 30*s)
	w.expect("far record", "u1[20s,30s]=1")
	w.pipe("u1", 12*s)
	w.expect("out of order", "u1[2s,12s]=2", "u1[5s,15s]=3", "u1[10.001s,20.001s]=2", "u1[12.001s,22.001s]=1")
	w.pipe("u1", 60*s) // stream time 60s: windows ending before 40s are closed
	w.read()
	w.pipe("u1", 29*s) // the latest window it could be in, [29s, 39s], closed
	w.expectRejected("late", topology.ReasonLate)
}

// Sliding windows emit final results once, and never an empty window.
func TestSlidingEmitFinal(t *testing.T) {
	w := newWindowed(t, topology.SlidingWindows(10*time.Second), true)
	s := time.Second
	w.pipe("u1", 10*s)
	w.pipe("u1", 15*s)
	w.expect("stream time past 10s", "u1[0s,10s]=1")
	w.pipe("u1", 100*s)
	w.expect("closed", "u1[5s,15s]=2", "u1[10.001s,20.001s]=1")
}

// Sessions merge records within the gap; a record that bridges two
// sessions merges them into one.
func TestSessionMerges(t *testing.T) {
	w := newWindowed(t, topology.SessionWindows(5*time.Minute).WithGrace(30*time.Minute), false)
	m := time.Minute
	w.pipe("u1", 0)
	w.pipe("u1", 10*m)
	w.pipe("u1", 5*m) // exactly gap from both: bridges them
	w.pipe("u2", 3*m)
	w.expect("bridge", "u1[0s,0s]=1", "u1[10m0s,10m0s]=1", "u1[0s,10m0s]=3", "u2[3m0s,3m0s]=1")
}

// A session closes at its end plus gap plus grace; its final result is
// emitted once, and a record within gap of it afterwards is late.
func TestSessionEmitFinal(t *testing.T) {
	w := newWindowed(t, topology.SessionWindows(5*time.Minute), true)
	m := time.Minute
	w.pipe("u1", 0)
	w.pipe("u1", 3*m)
	w.pipe("u2", 8*m) // a record at 8m could still join [0, 3m]
	w.expect("open until 8m")
	w.pipe("u2", 8*m+time.Millisecond) // stream time past 8m: [0, 3m] closes
	w.expect("closed", "u1[0s,3m0s]=2")
	w.pipe("u1", 2*m) // within gap of the emitted session, which is closed: late
	w.expectRejected("late", topology.ReasonLate)
	w.pipe("u2", time.Hour)
	w.expect("u2's session", "u2[8m0s,8m0.001s]=2")
}

// Validate refuses windows that cannot work, all at once.
func TestWindowMistakes(t *testing.T) {
	tp := topology.New("bad")
	in := topology.Source(tp, "in", serde.String(), serde.Int64())
	g := topology.GroupByKey(in, "g", serde.String(), serde.Int64())
	out := func(s topology.Stream[topology.Windowed[string], int64]) {
		topology.To(s, "out-"+fmt.Sprint(len(tp.Describe())), topology.WindowedCodec(serde.String()), serde.Int64())
	}
	out(g.WindowedBy(topology.HoppingWindows(time.Minute, 2*time.Minute)).Count("hop"))
	out(g.WindowedBy(topology.TumblingWindows(time.Minute).WithGrace(-time.Second)).Count("neg"))
	out(g.WindowedBy(topology.TumblingWindows(time.Minute).WithRetention(time.Second)).Count("short"))
	out(g.WindowedBy(topology.Windows{}).Count("none"))
	out(g.WindowedBy(topology.TumblingWindows(time.Minute)).Count(""))
	out(topology.WindowedAggregate(g.WindowedBy(topology.SessionWindows(time.Minute)), "no-merge", serde.Int64(),
		func() int64 { return 0 }, func(string, int64, int64) (int64, error) { return 0, nil }, nil))
	err := tp.Validate()
	if err == nil {
		t.Fatal("Validate accepted the mistakes")
	}
	for _, want := range []string{
		`"hop": hopping windows: advance 2m0s must be a positive number of milliseconds no larger than the size 1m0s`,
		`"neg": tumbling windows: grace -1s`,
		`"short": tumbling windows: retention 1s is shorter`,
		`"none": no windows given`,
		`windowed-count: name is empty`,
		`"no-merge": session windows need a merger`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}

// The windowed key codec writes the key's bytes, then start and end in
// milliseconds, 8 bytes each, big-endian; it reads them back.
func TestWindowedCodec(t *testing.T) {
	c := topology.WindowedCodec(serde.String())
	w := topology.Windowed[string]{Key: "u1", Start: t0, End: t0.Add(time.Hour)}
	b, err := c.Encode(w)
	if err != nil {
		t.Fatal(err)
	}
	// 2026-01-01T00:00:00Z is 1767225600000 ms = 0x19b76daa800.
	want := append([]byte("u1"), 0, 0, 0x01, 0x9b, 0x76, 0xda, 0xa8, 0x00)
	want = append(want, 0, 0, 0x01, 0x9b, 0x77, 0x11, 0x96, 0x80)
	if !slices.Equal(b, want) {
		t.Errorf("encoded % x, want % x", b, want)
	}
	got, err := c.Decode(b)
	if err != nil || got.Key != w.Key || !got.Start.Equal(w.Start) || !got.End.Equal(w.End) {
		t.Errorf("decoded %v, %v; want %v", got, err, w)
	}
	if _, err := c.Decode([]byte("short")); err == nil {
		t.Error("decoded 5 bytes")
	}
}

// A record stamped far beyond the wall clock does not move stream time
// (it is rejected, see TestWindowRejectsFarFutureRecords): it does not
// close every window.
func TestWindowStreamTimeBoundedByWallClock(t *testing.T) {
	w := newWindowed(t, topology.TumblingWindows(time.Hour).WithGrace(5*time.Minute), true)
	wall := 48 * time.Hour // newWindowed's wall clock, from t0; the skew allowed is 1 hour
	w.pipe("u1", wall+10*time.Minute)
	w.pipe("u2", wall+5*24*time.Hour)
	w.expect("after a far-future record")
	w.expectRejected("the far-future record", topology.ReasonFutureTimestamp)
	w.pipe("u1", wall+40*time.Minute) // its window, [wall, wall+1h), is still open
	w.expectRejected("on time after the far-future record")
	w.d.AdvanceWallClock(2 * time.Hour)
	w.pipe("u3", wall+2*time.Hour) // stream time wall + 2h closes [wall, wall+1h)
	w.expect("closed", "u1[48h0m0s,49h0m0s]=2")
}

// With a retention longer than size + grace a closed window's state is
// kept, and still its final result comes once and late records are
// rejected.
func TestWindowRetentionKeepsClosedWindows(t *testing.T) {
	w := newWindowed(t, topology.TumblingWindows(time.Hour).WithRetention(24*time.Hour), true)
	entries := func() int {
		t.Helper()
		n, err := w.d.StoreLen("views-per-window", 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	w.pipe("u1", 10*time.Minute)
	w.pipe("u1", time.Hour) // closes [0, 1h)
	w.expect("first close", "u1[0s,1h0m0s]=1")
	// Stream time; [0, 1h) kept with its expiry entry; [1h, 2h) with its close entry.
	if n := entries(); n != 5 {
		t.Errorf("%d store entries after the first close, want 5", n)
	}
	w.pipe("u1", 30*time.Minute)
	w.expectRejected("late into a kept window", topology.ReasonLate)
	w.pipe("u1", 3*time.Hour)
	w.pipe("u1", 26*time.Hour) // beyond the retention of [0, 1h) and [1h, 2h): deleted
	w.expect("later closes", "u1[1h0m0s,2h0m0s]=1", "u1[3h0m0s,4h0m0s]=1")
	// Stream time, [3h, 4h) kept until 27h, [26h, 27h) open: each with its index entry.
	if n := entries(); n != 5 {
		t.Errorf("%d store entries after expiry, want 5", n)
	}
}

// By default a window's state goes when it closes.
func TestWindowStateGoesAtClose(t *testing.T) {
	w := newWindowed(t, topology.TumblingWindows(time.Hour), true)
	w.pipe("u1", 10*time.Minute)
	w.pipe("u2", 20*time.Minute)
	w.pipe("u1", 5*time.Hour)
	w.expect("closed", "u1[0s,1h0m0s]=1", "u2[0s,1h0m0s]=1")
	// Stream time and the open window [5h, 6h) with its close entry.
	if n, err := w.d.StoreLen("views-per-window", 0); err != nil || n != 3 {
		t.Errorf("%d store entries (%v), want 3", n, err)
	}
}

// A record without a timestamp (Kafka's -1) belongs to no window: it is
// rejected with its reason and changes nothing.
func TestWindowRejectsRecordsWithoutTimestamp(t *testing.T) {
	w := newWindowed(t, topology.TumblingWindows(time.Hour), false)
	if err := w.in.PipeRecord(topologytest.Record[string, string]{Key: "u1", Value: "page", Timestamp: time.UnixMilli(-1)}); err != nil {
		t.Fatal(err)
	}
	w.expect("no timestamp")
	w.expectRejected("no timestamp", topology.ReasonInvalidTimestamp)
	w.pipe("u1", 0)
	w.expect("the next record", "u1[0s,1h0m0s]=1")
}
