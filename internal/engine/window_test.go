package engine_test

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// windowTopology counts views per user per minute, with 10 s of grace,
// final results only.
func windowTopology(in, out string) *topology.Topology {
	tp := topology.New("windows")
	src := topology.Source(tp, in, serde.String(), serde.String())
	counts := topology.GroupByKey(src, "by-user", serde.String(), serde.String()).
		WindowedBy(topology.TumblingWindows(time.Minute).WithGrace(10 * time.Second)).
		EmitFinal().
		Count("views")
	topology.To(counts, out, topology.WindowedCodec(serde.String()), serde.Int64())
	return tp
}

// views are n records of 20 users, 100 ms apart from base: every 10th is
// 5 s out of order (within grace), every 500th 2 min (late). truth counts
// the ones on time per user and window; late is how many are late.
type views struct {
	records []*kgo.Record
	truth   map[string]int64 // "user@window start ms"
	late    int
}

func makeViews(topic string, base time.Time, n int) views {
	v := views{truth: map[string]int64{}}
	for i := range n {
		user := fmt.Sprintf("user-%d", i%20)
		ts := base.Add(time.Duration(i) * 100 * time.Millisecond)
		switch {
		case i%500 == 499:
			ts = ts.Add(-2 * time.Minute)
			v.late++
		case i%10 == 9:
			ts = ts.Add(-5 * time.Second)
			v.truth[fmt.Sprintf("%s@%d", user, ts.Truncate(time.Minute).UnixMilli())]++
		default:
			v.truth[fmt.Sprintf("%s@%d", user, ts.Truncate(time.Minute).UnixMilli())]++
		}
		v.records = append(v.records, &kgo.Record{Topic: topic, Key: []byte(user), Value: []byte("page"), Timestamp: ts})
	}
	return v
}

// A window's final result larger than the output topic accepts is
// rejected alone (too-large): the records whose stream time closes
// windows, and the other windows' final results, go on. Before, the
// refusal rejected the closing record whole, close included, so every
// later record that moved stream time was rejected too-large and no window
// of the task closed again.
func TestOversizedFinalResultIsRejectedAlone(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	limit := "2000"
	env.CreateTopicConfigs(out, 1, map[string]*string{"max.message.bytes": &limit})
	tp := topology.New("concat")
	src := topology.Source(tp, in, serde.String(), serde.String())
	concat := topology.GroupByKey(src, "by-user", serde.String(), serde.String()).
		WindowedBy(topology.TumblingWindows(time.Minute)).EmitFinal().
		Reduce("pages", func(agg, v string) (string, error) { return agg + v, nil })
	topology.To(concat, out, topology.WindowedCodec(serde.String()), serde.String())

	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	// big@[0, 1m) grows by 10 bytes a record until its changelog record
	// would exceed the limit (those records are rejected too-large); the
	// largest aggregate the changelog takes is too large for the output,
	// whose records carry the lineage header besides.
	var rs []*kgo.Record
	for i := range 250 {
		rs = append(rs, &kgo.Record{Topic: in, Key: []byte("big"), Value: []byte("0123456789"), Timestamp: base.Add(time.Duration(i) * 100 * time.Millisecond)})
	}
	for i := range 6 { // small@[i min, i+1 min): each closes the one before
		rs = append(rs, &kgo.Record{Topic: in, Key: []byte("small"), Value: []byte("p"), Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	env.ProduceRecords(rs...)
	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	env.WaitCount(out, 5, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	var keys []string
	for _, o := range env.Read(out) {
		w, err := topology.WindowedCodec(serde.String()).Decode(o.Key)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, fmt.Sprintf("%s@%v", w.Key, w.Start.Sub(base)))
	}
	if want := []string{"small@0s", "small@1m0s", "small@2m0s", "small@3m0s", "small@4m0s"}; fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Errorf("final results %q, want %q", keys, want)
	}
	results := 0
	for _, r := range env.Read(app + "-rejected") {
		if got := r.Headers[wire.HeaderRejectReason]; got != wire.ReasonTooLarge {
			t.Errorf("rejected %q with reason %q, want %q", r.Key, got, wire.ReasonTooLarge)
		}
		if r.Headers[wire.HeaderRejectedRecord] == "window-result" {
			if string(r.Key) != "big" || r.Headers[wire.HeaderWindowStart] != strconv.FormatInt(base.UnixMilli(), 10) {
				t.Errorf("rejected window result key=%q start=%s, want big's window at %d", r.Key, r.Headers[wire.HeaderWindowStart], base.UnixMilli())
			}
			results++ // big's final result, rejected as itself
		} else if string(r.Key) == "small" {
			t.Errorf("the closing record small was rejected; its own effects committed")
		}
	}
	if results != 1 {
		t.Errorf("%d rejected window results, want 1 (big's final result)", results)
	}
}

// A window's final result that fails downstream is written to the rejected
// topic as itself (the window's key and aggregate, marked with its bounds),
// not as the input record whose stream time closed the window: that
// record's own effects commit, so replaying it would count it twice.
func TestFailedWindowResultIsRejectedAsItself(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	tp := topology.New("windows")
	src := topology.Source(tp, in, serde.String(), serde.String())
	counts := topology.GroupByKey(src, "by-user", serde.String(), serde.String()).
		WindowedBy(topology.TumblingWindows(time.Minute)).EmitFinal().Count("views")
	checked := topology.MapValues(counts, func(n int64) (int64, error) {
		if n == 2 {
			return 0, fmt.Errorf("two is refused")
		}
		return n, nil
	})
	topology.To(checked, out, topology.WindowedCodec(serde.String()), serde.Int64())
	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	env.ProduceRecords(
		&kgo.Record{Topic: in, Key: []byte("u1"), Value: []byte("page"), Timestamp: base},
		&kgo.Record{Topic: in, Key: []byte("u1"), Value: []byte("page"), Timestamp: base.Add(time.Second)},
		&kgo.Record{Topic: in, Key: []byte("u2"), Value: []byte("closer"), Timestamp: base.Add(time.Minute)},   // closes u1's window
		&kgo.Record{Topic: in, Key: []byte("u3"), Value: []byte("page"), Timestamp: base.Add(2 * time.Minute)}, // closes u2's
	)
	r := env.Start(stateConfig(env, app, "r1", t.TempDir()), compile(t, tp))
	rejected := app + "-rejected"
	env.WaitCount(rejected, 1, 60*time.Second)
	env.WaitCount(out, 1, 60*time.Second)
	r.Stop()

	rs := env.Read(rejected)
	if len(rs) != 1 {
		t.Fatalf("%d rejected records, want 1", len(rs))
	}
	got := rs[0]
	agg := binary.BigEndian.AppendUint64(nil, 2)
	g := fmt.Sprintf("key=%q value=%x %s=%q start=%s end=%s reason=%s", got.Key, got.Value, wire.HeaderRejectedRecord, got.Headers[wire.HeaderRejectedRecord],
		got.Headers[wire.HeaderWindowStart], got.Headers[wire.HeaderWindowEnd], got.Headers[wire.HeaderRejectReason])
	w := fmt.Sprintf("key=%q value=%x %s=%q start=%d end=%d reason=%s", "u1", agg, wire.HeaderRejectedRecord, "window-result",
		base.UnixMilli(), base.Add(time.Minute).UnixMilli(), wire.ReasonProcessingError)
	if g != w {
		t.Errorf("rejected record:\n got  %s\n want %s", g, w)
	}
	// The closing record's own effect committed: its window's result.
	var results []string
	for _, o := range env.Read(out) {
		results = append(results, fmt.Sprintf("%s=%d", o.Key, binary.BigEndian.Uint64(o.Value)))
	}
	if len(results) != 1 || !strings.HasPrefix(results[0], "u2") || !strings.HasSuffix(results[0], "=1") {
		t.Errorf("results %v, want u2's window with 1", results)
	}
}
