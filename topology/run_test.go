package topology_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// emitted is one record a sink encoded.
type emitted struct {
	topic      string
	key, value string
	headers    string
	ts         time.Time
}

// recorder is a fake graph.Emitter that keeps what it is given.
type recorder struct {
	out      []emitted
	rejected []*graph.Rejection
	err      error // returned by Emit when set
}

func (r *recorder) Reject(rej *graph.Rejection) error {
	r.rejected = append(r.rejected, rej)
	return nil
}

func (r *recorder) Mark() graph.Mark {
	return graph.Mark{Outputs: len(r.out), Rejections: len(r.rejected)}
}

func (r *recorder) Rollback(m graph.Mark) {
	r.out = r.out[:m.Outputs]
	r.rejected = r.rejected[:m.Rejections]
}

func (r *recorder) Emit(topic string, key, value []byte, headers []graph.Header, ts time.Time) error {
	if r.err != nil {
		return r.err
	}
	var hs []string
	for _, h := range headers {
		hs = append(hs, h.Key+"="+string(h.Value))
	}
	r.out = append(r.out, emitted{topic: topic, key: string(key), value: string(value), headers: strings.Join(hs, ","), ts: ts})
	return nil
}

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

var ts0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// push compiles tp, decodes key and value with the source of topic and runs
// the record through the graph.
func push(t *testing.T, tp *topology.Topology, in graph.Input, key, value []byte) ([]emitted, error) {
	t.Helper()
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	src := g.Source(in.Topic)
	if src == nil {
		t.Fatalf("no source for %q", in.Topic)
	}
	k, v, err := src.Decode(key, value)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	rec := &recorder{}
	err = graph.Run(src, &in, graph.Record{Key: k, Value: v, Headers: in.Headers, Timestamp: ts0}, rec)
	return rec.out, err
}

func input(topic string, headers ...graph.Header) graph.Input {
	return graph.Input{Topic: topic, Partition: 3, Offset: 42, Headers: headers}
}

func TestRunStages(t *testing.T) {
	hdr := graph.Header{Key: "event-id", Value: []byte("e-1")}
	for _, tc := range []struct {
		name       string
		build      func(*topology.Topology)
		key, value []byte
		want       []emitted
	}{
		{"copy keeps bytes, headers and timestamp", copyTopology, []byte{0, 1}, []byte{0xff}, []emitted{
			{topic: "out", key: "\x00\x01", value: "\xff", headers: "event-id=e-1", ts: ts0},
		}},
		{"map", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			m := topology.Map(in, func(k string, v int64) (int64, string, error) {
				return v * 10, strings.ToUpper(k), nil
			})
			topology.To(m, "out", serde.Int64(), serde.String())
		}, []byte("abc"), i64(7), []emitted{
			{topic: "out", key: string(i64(70)), value: "ABC", headers: "event-id=e-1", ts: ts0},
		}},
		{"map-values keeps the key", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			m := topology.MapValues(in, func(v int64) (string, error) { return fmt.Sprintf("v=%d", v), nil })
			topology.To(m, "out", serde.String(), serde.String())
		}, []byte("k"), i64(-1), []emitted{
			{topic: "out", key: "k", value: "v=-1", headers: "event-id=e-1", ts: ts0},
		}},
		{"filter keeps", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.Filter(in, func(_ string, v int64) bool { return v > 100 }), "out", serde.String(), serde.Int64())
		}, []byte("k"), i64(101), []emitted{
			{topic: "out", key: "k", value: string(i64(101)), headers: "event-id=e-1", ts: ts0},
		}},
		{"filter drops", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.Filter(in, func(_ string, v int64) bool { return v > 100 }), "out", serde.String(), serde.Int64())
		}, []byte("k"), i64(100), nil},
		{"flat-map to several", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			words := topology.FlatMap(in, func(k, v string) ([]topology.KeyValue[string, int64], error) {
				var out []topology.KeyValue[string, int64]
				for _, w := range strings.Fields(v) {
					out = append(out, topology.KeyValue[string, int64]{Key: k + ":" + w, Value: int64(len(w))})
				}
				return out, nil
			})
			topology.To(words, "out", serde.String(), serde.Int64())
		}, []byte("doc"), []byte("to be or"), []emitted{
			{topic: "out", key: "doc:to", value: string(i64(2)), headers: "event-id=e-1", ts: ts0},
			{topic: "out", key: "doc:be", value: string(i64(2)), headers: "event-id=e-1", ts: ts0},
			{topic: "out", key: "doc:or", value: string(i64(2)), headers: "event-id=e-1", ts: ts0},
		}},
		{"flat-map to none", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.String())
			words := topology.FlatMap(in, func(k, v string) ([]topology.KeyValue[string, string], error) { return nil, nil })
			topology.To(words, "out", serde.String(), serde.String())
		}, []byte("doc"), []byte("to be"), nil},
		{"process forwards several and reads the input", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			p := topology.Process(in, "explode", func(c topology.Context[string, string], r topology.Record[string, int64]) error {
				id, _ := c.InputHeaders().Get("event-id")
				at := c.Input()
				for i := range r.Value {
					err := c.Forward(topology.Record[string, string]{
						Key:       fmt.Sprintf("%s-%d", r.Key, i),
						Value:     fmt.Sprintf("%s/%d/%d %s", at.Topic, at.Partition, at.Offset, id),
						Headers:   topology.Headers{{Key: "n", Value: []byte(fmt.Sprint(i))}},
						Timestamp: r.Timestamp.Add(time.Duration(i) * time.Second),
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
			topology.To(p, "out", serde.String(), serde.String())
		}, []byte("k"), i64(3), []emitted{
			{topic: "out", key: "k-0", value: "in/3/42 e-1", headers: "n=0", ts: ts0},
			{topic: "out", key: "k-1", value: "in/3/42 e-1", headers: "n=1", ts: ts0.Add(time.Second)},
			{topic: "out", key: "k-2", value: "in/3/42 e-1", headers: "n=2", ts: ts0.Add(2 * time.Second)},
		}},
		{"branches each get the record, in order", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(in, "all", serde.String(), serde.Int64())
			neg := topology.MapValues(in, func(v int64) (int64, error) { return -v, nil })
			topology.To(neg, "negated", serde.String(), serde.Int64())
			topology.To(neg, "negated-text", serde.String(), serde.JSON[int64]())
		}, []byte("k"), i64(5), []emitted{
			{topic: "all", key: "k", value: string(i64(5)), headers: "event-id=e-1", ts: ts0},
			{topic: "negated", key: "k", value: string(i64(-5)), headers: "event-id=e-1", ts: ts0},
			{topic: "negated-text", key: "k", value: "-5", headers: "event-id=e-1", ts: ts0},
		}},
		{"null key decodes to the zero key", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.Int64(), serde.String())
			m := topology.Map(in, func(k int64, v string) (string, string, error) { return fmt.Sprint(k), v, nil })
			topology.To(m, "out", serde.String(), serde.String())
		}, nil, []byte("v"), []emitted{
			{topic: "out", key: "0", value: "v", headers: "event-id=e-1", ts: ts0},
		}},
		{"chain of every stage", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.JSON[[]int64]())
			split := topology.FlatMap(in, func(k string, vs []int64) ([]topology.KeyValue[string, int64], error) {
				var out []topology.KeyValue[string, int64]
				for _, v := range vs {
					out = append(out, topology.KeyValue[string, int64]{Key: k, Value: v})
				}
				return out, nil
			})
			odd := topology.Filter(split, func(_ string, v int64) bool { return v%2 != 0 })
			sq := topology.MapValues(odd, func(v int64) (int64, error) { return v * v, nil })
			keyed := topology.Map(sq, func(k string, v int64) (string, int64, error) { return fmt.Sprintf("%s#%d", k, v), v, nil })
			p := topology.Process(keyed, "last", func(c topology.Context[string, int64], r topology.Record[string, int64]) error {
				return c.Forward(r)
			})
			topology.To(p, "out", serde.String(), serde.Int64())
		}, []byte("k"), []byte("[1,2,3]"), []emitted{
			{topic: "out", key: "k#1", value: string(i64(1)), headers: "event-id=e-1", ts: ts0},
			{topic: "out", key: "k#9", value: string(i64(9)), headers: "event-id=e-1", ts: ts0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := build(t, "run", tc.build)
			got, err := push(t, tp, input("in", hdr), tc.key, tc.value)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("emitted %d records, want %d:\n got  %+v\n want %+v", len(got), len(tc.want), got, tc.want)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if g.topic != w.topic || g.key != w.key || g.value != w.value || g.headers != w.headers || !g.ts.Equal(w.ts) {
					t.Errorf("record %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestSourceDecodeErrors(t *testing.T) {
	tp := build(t, "d", func(tp *topology.Topology) {
		in := topology.Source(tp, "in", serde.Int64(), serde.JSON[map[string]int]())
		topology.To(in, "out", serde.Int64(), serde.JSON[map[string]int]())
	})
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	src := g.Source("in")
	for _, tc := range []struct {
		name       string
		key, value []byte
		prefix     string
		null       bool
	}{
		{"short key", []byte{1}, []byte(`{}`), "key: serde: int64", false},
		{"malformed value", i64(1), []byte(`{`), "value: serde: json decode", false},
		{"tombstone value", i64(1), nil, "value: serde: null value", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := src.Decode(tc.key, tc.value)
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.HasPrefix(err.Error(), tc.prefix) {
				t.Errorf("error %q: want prefix %q", err, tc.prefix)
			}
			if errors.Is(err, serde.ErrNull) != tc.null {
				t.Errorf("errors.Is(%v, ErrNull) = %v, want %v", err, !tc.null, tc.null)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name     string
		build    func(*topology.Topology)
		node     string
		wantMsg  string
		wantBoom bool
	}{
		{"map", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.Map(in, func(string, int64) (string, int64, error) { return "", 0, boom }), "out", serde.String(), serde.Int64())
		}, "map-1", `node "map-1": boom`, true},
		{"map-values", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.MapValues(in, func(int64) (int64, error) { return 0, boom }), "out", serde.String(), serde.Int64())
		}, "map-values-1", `node "map-values-1": boom`, true},
		{"flat-map", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.FlatMap(in, func(string, int64) ([]topology.KeyValue[string, int64], error) { return nil, boom }), "out", serde.String(), serde.Int64())
		}, "flat-map-1", `node "flat-map-1": boom`, true},
		{"process", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			topology.To(topology.Process(in, "enrich", func(topology.Context[string, int64], topology.Record[string, int64]) error {
				return fmt.Errorf("lookup: %w", boom)
			}), "out", serde.String(), serde.Int64())
		}, "enrich", `node "enrich": lookup: boom`, true},
		{"a failure downstream of a process names the failing node", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			p := topology.Process(in, "fan-out", func(c topology.Context[string, int64], r topology.Record[string, int64]) error {
				if err := c.Forward(r); err != nil {
					return fmt.Errorf("fan-out: %w", err)
				}
				return nil
			})
			topology.To(topology.MapValues(p, func(int64) (int64, error) { return 0, boom }), "out", serde.String(), serde.Int64())
		}, "map-values-1", `fan-out: node "map-values-1": boom`, true},
		{"sink encode", func(tp *topology.Topology) {
			in := topology.Source(tp, "in", serde.String(), serde.Int64())
			nan := topology.MapValues(in, func(int64) (float64, error) { return math.NaN(), nil })
			topology.To(nan, "out", serde.String(), serde.JSON[float64]())
		}, "sink-1", `node "sink-1": value: serde: json encode`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := build(t, "err", tc.build)
			out, err := push(t, tp, input("in"), []byte("k"), i64(1))
			if err == nil {
				t.Fatalf("Run: want an error, emitted %+v", out)
			}
			ne, ok := errors.AsType[*graph.NodeError](err)
			if !ok {
				t.Fatalf("Run error %v (%T) is not a *graph.NodeError", err, err)
			}
			if ne.Node != tc.node {
				t.Errorf("NodeError.Node = %q, want %q", ne.Node, tc.node)
			}
			if !strings.HasPrefix(err.Error(), tc.wantMsg) {
				t.Errorf("error %q: want prefix %q", err, tc.wantMsg)
			}
			if errors.Is(err, boom) != tc.wantBoom {
				t.Errorf("errors.Is(err, boom) = %v, want %v", !tc.wantBoom, tc.wantBoom)
			}
			if len(out) != 0 {
				t.Errorf("emitted %+v despite the error", out)
			}
		})
	}
}

// An Emit failure comes back from Run; it is the runtime's, not a node's.
func TestRunEmitError(t *testing.T) {
	tp := build(t, "emit", copyTopology)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	full := errors.New("buffer full")
	in := input("in")
	err = graph.Run(g.Source("in"), &in, graph.Record{Key: []byte("k"), Value: []byte("v")}, &recorder{err: full})
	if !errors.Is(err, full) {
		t.Fatalf("Run = %v, want %v", err, full)
	}
}

// A Process that uses a store it did not declare gets an error naming the
// store, the stage and the fix, not a bare "no state".
func TestUndeclaredStoreIsNamed(t *testing.T) {
	tp := topology.New("undeclared")
	in := topology.Source(tp, "in", serde.String(), serde.String())
	counts := topology.Store(tp, "counts", serde.String(), serde.Int64())
	a := topology.Process(in, "a", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		if _, _, err := counts.Get(ctx, r.Key); err != nil {
			return err
		}
		return ctx.Forward(r)
	})
	b := topology.Process(a, "b", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		return ctx.Forward(r)
	}, counts)
	topology.To(b, "out", serde.String(), serde.String())
	_, err := push(t, tp, input("in"), []byte("k"), []byte("v"))
	if !errors.Is(err, topology.ErrUndeclaredStore) {
		t.Fatalf("Run = %v, want ErrUndeclaredStore", err)
	}
	for _, want := range []string{`store "counts"`, `process "a"`, `topology.Process(stream, "a", fn, store)`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
}

// A gate's rejection drops the rejected record and what its own path
// emitted since the nearest split; siblings flow on, and a Process whose
// Forward led to a rejection gets nil back.
func TestRejectionIsPerRecordInFlight(t *testing.T) {
	tp := topology.New("reject-one")
	in := topology.Source(tp, "in", serde.String(), serde.String())
	var forwardErrs []error
	split := topology.Process(in, "split", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		for _, v := range strings.Split(r.Value, ",") {
			forwardErrs = append(forwardErrs, ctx.Forward(topology.Record[string, string]{Key: r.Key, Value: v}))
		}
		return nil
	})
	// A branch that outputs every part, and a branch that outputs the part
	// and then has a gate reject "bad" after it: what that branch output
	// before the gate, for "bad", is rolled back with it.
	topology.To(split, "all", serde.String(), serde.String())
	gated := topology.Process(split, "gate", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		if r.Value == "bad" {
			return &graph.Rejection{Reason: "test", Detail: "bad part"}
		}
		return ctx.Forward(r)
	})
	topology.To(gated, "good", serde.String(), serde.String())
	out, err := push(t, tp, input("in"), []byte("k"), []byte("x,bad,y"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got []string
	for _, e := range out {
		got = append(got, e.topic+":"+e.value)
	}
	want := []string{"all:x", "good:x", "all:bad", "all:y", "good:y"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("outputs %v, want %v", got, want)
	}
	for i, err := range forwardErrs {
		if err != nil {
			t.Errorf("Forward %d returned %v, want nil", i, err)
		}
	}
}
