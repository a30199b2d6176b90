package topologytest_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// buffered sums values per key in a store; a punctuator of kind every
// interval forwards each sum and deletes it (or fails when fail is set).
func buffered(kind topology.TimeKind, every time.Duration, fail *bool) *topology.Topology {
	tp := topology.New("buffer")
	in := topology.Source(tp, "in", serde.String(), serde.Int64())
	sums := topology.Store(tp, "sums", serde.String(), serde.Int64())
	out := topology.Process(in, "buffer", func(ctx topology.Context[string, int64], r topology.Record[string, int64]) error {
		n, _, err := sums.Get(ctx, r.Key)
		if err != nil {
			return err
		}
		return sums.Put(ctx, r.Key, n+r.Value)
	}, sums)
	topology.Punctuate(out, kind, every, func(ctx topology.Context[string, int64], at time.Time) error {
		var keys []string
		var vals []int64
		if err := sums.Range(ctx, func(k string, v int64) bool {
			keys, vals = append(keys, k), append(vals, v)
			return true
		}); err != nil {
			return err
		}
		for i, k := range keys {
			if err := ctx.Forward(topology.Record[string, int64]{Key: k, Value: vals[i], Timestamp: at}); err != nil {
				return err
			}
			if err := sums.Delete(ctx, k); err != nil {
				return err
			}
		}
		if fail != nil && *fail {
			return errors.New("punctuator failed")
		}
		return nil
	})
	topology.To(out, "sums", serde.String(), serde.Int64())
	return tp
}

func readSums(t *testing.T, d *topologytest.Driver) []string {
	t.Helper()
	rs, err := topologytest.Output(d, "sums", serde.String(), serde.Int64()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.Key+"="+string(rune('0'+r.Value)))
	}
	return out
}

// A stream-time punctuator fires when the task's stream time passes each
// interval (the first one interval after its first record), once however
// many intervals a jump skips, and sees and changes the stage's store.
func TestStreamTimePunctuator(t *testing.T) {
	d := newDriver(t, buffered(topology.StreamTime, time.Minute, nil), topologytest.Config{WallClock: t0.Add(time.Hour)})
	in := topologytest.Input(d, "in", serde.String(), serde.Int64())
	pipe := func(k string, v int64, at time.Duration) {
		t.Helper()
		if err := in.PipeRecord(topologytest.Record[string, int64]{Key: k, Value: v, Timestamp: t0.Add(at)}); err != nil {
			t.Fatal(err)
		}
	}
	pipe("a", 1, 0)
	pipe("a", 2, 30*time.Second)
	pipe("b", 4, 59*time.Second)
	if got := readSums(t, d); len(got) != 0 {
		t.Fatalf("fired before a minute of stream time: %v", got)
	}
	pipe("a", 1, 60*time.Second) // stream time 1m: fires after the record
	if got, want := readSums(t, d), []string{"a=4", "b=4"}; !slices.Equal(got, want) {
		t.Errorf("first firing %v, want %v", got, want)
	}
	pipe("b", 1, 10*time.Minute) // skips eight intervals: fires once
	pipe("b", 2, 10*time.Minute+30*time.Second)
	if got, want := readSums(t, d), []string{"b=1"}; !slices.Equal(got, want) {
		t.Errorf("after a jump %v, want %v", got, want)
	}
}

// A wall-clock punctuator fires as the wall clock passes each interval,
// input or not, on every partition.
func TestWallClockPunctuator(t *testing.T) {
	d := newDriver(t, buffered(topology.WallClockTime, time.Minute, nil), topologytest.Config{Partitions: 2})
	in := topologytest.Input(d, "in", serde.String(), serde.Int64())
	for p, k := range []string{"a", "b"} {
		if err := in.PipeRecord(topologytest.Record[string, int64]{Key: k, Value: 3, Partition: int32(p)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.AdvanceWallClock(59 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := readSums(t, d); len(got) != 0 {
		t.Fatalf("fired before a minute: %v", got)
	}
	if err := d.AdvanceWallClock(time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := readSums(t, d), []string{"a=3", "b=3"}; !slices.Equal(got, want) {
		t.Errorf("firing %v, want %v", got, want)
	}
	if err := d.AdvanceWallClock(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := readSums(t, d); len(got) != 0 {
		t.Errorf("second firing forwarded deleted sums again: %v", got)
	}
}

// A punctuation that fails leaves no output and no state change: the next
// one forwards the same sums.
func TestFailedPunctuationLeavesNothing(t *testing.T) {
	fail := true
	d := newDriver(t, buffered(topology.WallClockTime, time.Minute, &fail), topologytest.Config{})
	in := topologytest.Input(d, "in", serde.String(), serde.Int64())
	if err := in.Pipe("a", 2); err != nil {
		t.Fatal(err)
	}
	if err := d.AdvanceWallClock(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := readSums(t, d); len(got) != 0 {
		t.Errorf("a failed punctuation forwarded %v", got)
	}
	if errs := d.PunctuationErrors(); len(errs) != 1 {
		t.Errorf("punctuation errors %v, want one", errs)
	}
	fail = false
	if err := d.AdvanceWallClock(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, want := readSums(t, d), []string{"a=2"}; !slices.Equal(got, want) {
		t.Errorf("after the failure %v, want %v", got, want)
	}
}

// Validate refuses punctuators that cannot work, all at once.
func TestPunctuatorMistakes(t *testing.T) {
	tp := topology.New("bad")
	in := topology.Source(tp, "in", serde.String(), serde.Int64())
	noop := func(topology.Context[string, int64], time.Time) error { return nil }
	filtered := topology.Filter(in, func(string, int64) bool { return true })
	topology.Punctuate(filtered, topology.WallClockTime, time.Second, noop)
	stateless := topology.Process(in, "stateless", func(topology.Context[string, int64], topology.Record[string, int64]) error { return nil })
	topology.Punctuate(stateless, topology.StreamTime, time.Second, noop)
	topology.Punctuate(stateless, topology.WallClockTime, 0, noop)
	topology.Punctuate(stateless, topology.WallClockTime, time.Second, nil)
	topology.To(filtered, "out", serde.String(), serde.Int64())
	err := tp.Validate()
	if err == nil {
		t.Fatal("Validate accepted the mistakes")
	}
	for _, want := range []string{
		`punctuate: filter "filter-1" is not a Process stage`,
		`punctuate "stateless": a stream-time punctuator needs its Process stage to declare a store`,
		`punctuate "stateless": interval 0s must be at least 1ms`,
		`punctuate "stateless": function is nil`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}
