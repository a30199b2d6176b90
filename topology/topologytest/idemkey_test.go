package topologytest_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// Default idempotency keys: one per delivery, the same on every replay.
// A sink runner skips a key it settled before, so two deliveries sharing
// a key lose the second one.

// fruits splits a line into one record per word, keyed by the word.
func fruits(in topology.Stream[string, string]) topology.Stream[string, string] {
	return topology.FlatMap(in, func(_ string, line string) ([]topology.KeyValue[string, string], error) {
		var kvs []topology.KeyValue[string, string]
		for _, w := range strings.Fields(line) {
			kvs = append(kvs, topology.KeyValue[string, string]{Key: w, Value: w})
		}
		return kvs, nil
	})
}

// distinctKeys fails the test unless every delivery of sink has a key of
// its own; it returns the deliveries.
func distinctKeys(t *testing.T, d *topologytest.Driver, sink string, want int) [][4]string {
	t.Helper()
	got := outbox(t, d, sink)
	if len(got) != want {
		t.Fatalf("%s outbox has %d deliveries, want %d: %q", sink, len(got), want, got)
	}
	seen := map[string]string{}
	for _, r := range got {
		if other, ok := seen[r[1]]; ok {
			t.Errorf("%s: deliveries %q and %q share the idempotency key %q", sink, other, r[2], r[1])
		}
		seen[r[1]] = r[2]
	}
	return got
}

// keysOf returns the idempotency keys of deliveries.
func keysOf(ds [][4]string) []string {
	var ks []string
	for _, d := range ds {
		ks = append(ks, d[1])
	}
	return ks
}

// A fan-out read back from a repartition topic (GroupBy, Repartition) or a
// through topic gives each delivery a key of its own, from the record's
// own coordinates on the topic it was read from, while the lineage still
// names the input record. Processing the same input again gives the same
// keys.
func TestToSinkKeysAfterFanOut(t *testing.T) {
	shapes := []struct {
		name  string
		build func(topology.Stream[string, string]) topology.Stream[string, string]
		topic string // the topic the sink's records are read from
	}{
		{"group-by", func(s topology.Stream[string, string]) topology.Stream[string, string] {
			return topology.GroupBy(fruits(s), "by-fruit", func(k, _ string) string { return k }, serde.String(), serde.String()).Stream()
		}, "test-by-fruit-repartition"},
		{"repartition", func(s topology.Stream[string, string]) topology.Stream[string, string] {
			return topology.Repartition(fruits(s), "moved", serde.String(), serde.String())
		}, "test-moved-repartition"},
		{"through", func(s topology.Stream[string, string]) topology.Stream[string, string] {
			return topology.Through(fruits(s), "fruit-by-name", serde.String(), serde.String())
		}, "fruit-by-name"},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			run := func() [][4]string {
				tp := topology.New("fruit")
				topology.ToSink(sh.build(topology.Source(tp, "baskets", serde.String(), serde.String())), "hook", nopSink, serde.String(), nil)
				d := newDriver(t, tp, topologytest.Config{})
				in := topologytest.Input(d, "baskets", serde.String(), serde.String())
				for _, b := range []string{"apple pear plum", "fig"} {
					if err := in.Pipe("b", b); err != nil {
						t.Fatal(err)
					}
				}
				return distinctKeys(t, d, "hook", 4)
			}
			got := run()
			var want [][4]string
			for i, f := range []string{"apple", "pear", "plum", "fig"} {
				src := "baskets/0/0"
				if f == "fig" {
					src = "baskets/0/1"
				}
				want = append(want, [4]string{f, "hook:" + sh.topic + "/0/" + strconv.Itoa(i), f, src})
			}
			if !equal(got, want) {
				t.Errorf("outbox:\n got %q\nwant %q", got, want)
			}
			if again := run(); !slices.Equal(keysOf(again), keysOf(got)) {
				t.Errorf("keys on a second run %q, first %q", keysOf(again), keysOf(got))
			}
		})
	}
}

// Every firing of a punctuator gives its deliveries keys of their own:
// the punctuator's task and timer, the time of the firing (and, for
// stream time, the record after which it fired), and a count within the
// firing. Two punctuators of one stage firing at the same
// stream time do not share keys either.
func TestToSinkKeysFromPunctuator(t *testing.T) {
	for name, kind := range map[string]topology.TimeKind{"wall-clock": topology.WallClockTime, "stream-time": topology.StreamTime} {
		t.Run(name, func(t *testing.T) {
			tp := topology.New("ticker")
			in := topology.Source(tp, "in", serde.String(), serde.String())
			seen := topology.Store(tp, "seen", serde.String(), serde.String())
			ticker := topology.Process(in, "ticker", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
				return seen.Put(ctx, r.Key, r.Value)
			}, seen)
			for _, tag := range []string{"minute", "again"} {
				topology.Punctuate(ticker, kind, time.Minute, func(ctx topology.Context[string, string], at time.Time) error {
					for _, v := range []string{"a", "b"} {
						if err := ctx.Forward(topology.Record[string, string]{Key: "tick", Value: tag + "/" + v + "@" + at.UTC().Format(time.TimeOnly), Timestamp: at}); err != nil {
							return err
						}
					}
					return nil
				})
			}
			topology.ToSink(ticker, "hook", nopSink, serde.String(), nil)
			d := newDriver(t, tp, topologytest.Config{WallClock: t0.Add(time.Hour)})
			pipe := topologytest.Input(d, "in", serde.String(), serde.String())
			for i := range 4 {
				if kind == topology.WallClockTime && i > 0 {
					if err := d.AdvanceWallClock(time.Minute); err != nil {
						t.Fatal(err)
					}
				}
				if err := pipe.PipeRecord(topologytest.Record[string, string]{Key: "k", Value: "v", Timestamp: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
					t.Fatal(err)
				}
			}
			got := distinctKeys(t, d, "hook", 12) // 3 firings of 2 punctuators, 2 deliveries each
			first := got[0][1]
			at := t0.Add(time.Minute)
			if kind == topology.WallClockTime {
				at = t0.Add(time.Hour + time.Minute)
			}
			want := "hook:punctuator/ticker/0_0/0@" + at.Format(time.RFC3339Nano)
			if kind == topology.StreamTime {
				want += "/in/0/1" // the record whose stream time brought it due
			}
			if first != want {
				t.Errorf("first key %q, want %q", first, want)
			}
			t.Logf("keys %q", keysOf(got))
		})
	}
}

// The final results of windows after a fan-out, closed by different
// records read back from the repartition topic, have keys of their own.
func TestToSinkKeysWindowFinalAfterFanOut(t *testing.T) {
	tp := topology.New("fruit")
	in := topology.Source(tp, "baskets", serde.String(), serde.String())
	// "apple@0 pear@90": each fruit stamped with its second of the day.
	split := topology.FlatMap(in, func(_ string, line string) ([]topology.KeyValue[string, string], error) {
		var kvs []topology.KeyValue[string, string]
		for _, w := range strings.Fields(line) {
			kvs = append(kvs, topology.KeyValue[string, string]{Key: w, Value: w})
		}
		return kvs, nil
	})
	stamped := topology.WithTimestamp(split, func(_ string, w string) time.Time {
		_, s, _ := strings.Cut(w, "@")
		n, _ := strconv.Atoi(s)
		return t0.Add(time.Duration(n) * time.Second)
	})
	byFruit := topology.GroupBy(stamped, "by-fruit", func(_ string, w string) string {
		f, _, _ := strings.Cut(w, "@")
		return f
	}, serde.String(), serde.String())
	counts := byFruit.WindowedBy(topology.TumblingWindows(time.Minute)).EmitFinal().Count("per-minute")
	results := topology.Map(counts, func(w topology.Windowed[string], n int64) (string, string, error) {
		return w.Key, fmt.Sprintf("%s[%v]=%d", w.Key, w.Start.Sub(t0), n), nil
	})
	topology.ToSink(results, "hook", nopSink, serde.String(), nil)
	d := newDriver(t, tp, topologytest.Config{WallClock: t0.Add(time.Hour)})
	pipe := topologytest.Input(d, "baskets", serde.String(), serde.String())
	// The second basket's apple closes the first minute of apple and pear,
	// its plum the second minute of apple; the third basket closes the rest.
	for _, b := range []string{"apple@0 pear@10", "apple@70 plum@130", "fig@300"} {
		if err := pipe.PipeRecord(topologytest.Record[string, string]{Key: "b", Value: b, Timestamp: t0}); err != nil {
			t.Fatal(err)
		}
	}
	got := distinctKeys(t, d, "hook", 4)
	var finals []string
	for _, r := range got {
		finals = append(finals, r[2])
	}
	slices.Sort(finals)
	if want := []string{"apple[0s]=1", "apple[1m0s]=1", "pear[0s]=1", "plum[2m0s]=1"}; !slices.Equal(finals, want) {
		t.Errorf("final results %q, want %q", finals, want)
	}
}
