package verify_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// balances is a topology whose outputs are unlike its inputs: it drops
// repeated event ids (rejected as duplicates) and writes each key's
// running total of value lengths.
func balances(in, out string) *topology.Topology {
	t := topology.New("balances")
	src := topology.Source(t, in, serde.String(), serde.String())
	fresh := topology.Dedup(src, "dedup", topology.EventIDHeader("event-id"), time.Hour)
	lens := topology.MapValues(fresh, func(v string) (int64, error) { return int64(len(v)), nil })
	totals := topology.Sum(lens, "balance", serde.String(), func(n int64) int64 { return n })
	topology.To(totals, out, serde.String(), serde.Int64())
	return t
}

// A correct run of a topology that transforms its records has every
// input's outcome once (an output or a rejection), whatever the values;
// an output written again, and an output lost, are caught.
func TestOutcomesOfARun(t *testing.T) {
	e := enginetest.New(t)
	in, out, app := e.Name("in"), e.Name("out"), e.Name("app")
	e.CreateTopic(in, 3)
	e.CreateTopic(out, 3)
	e.Produce(in, 0, 200)
	e.Produce(in, 0, 20) // the same event ids again: rejected as duplicates
	g, err := graph.Compile(balances(in, out))
	if err != nil {
		t.Fatal(err)
	}
	g = g.WithPrefix(app)
	r := e.Start(e.Config(app, "r1"), g)
	e.WaitCount(out, 200, 60*time.Second)
	e.WaitCount(app+"-rejected", 20, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	spec := verify.SpecOf(g, app+"-rejected")
	check := outcomeCheck(t, e, spec)

	rep := check("correct run")
	if !rep.OK || rep.Input != 220 || rep.Output != 200 || rep.WithOutput != 200 || rep.RejectedOnly != 20 || rep.Missing != 0 || rep.Doubled != 0 || rep.Unexpected != 0 {
		t.Fatalf("correct run: %+v", rep)
	}

	// A planted duplicate: one output written again, as a replay that
	// escaped its transaction would.
	outs := e.Read(out)
	last := outs[len(outs)-1]
	var hs []kgo.RecordHeader
	for k, v := range last.Headers {
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	e.ProduceRecords(&kgo.Record{Topic: out, Partition: last.Partition, Key: last.Key, Value: last.Value, Headers: hs})
	if rep := check("one output written twice"); rep.OK || rep.Doubled != 1 || rep.Extra != 1 || rep.Missing != 0 {
		t.Fatalf("planted duplicate: %+v", rep)
	}

	// A planted loss: the first output of a partition deleted.
	first := outs[0]
	e.DeleteRecords(out, map[int32]int64{first.Partition: first.Offset + 1})
	if rep := check("one output lost"); rep.OK || rep.Missing != 1 || rep.WithOutput != 199 {
		t.Fatalf("planted loss: %+v", rep)
	}
}

// windowsAndTicks copies its input (upper-cased), counts it per key and
// minute (final results only), and ticks every 50 ms from a punctuator.
func windowsAndTicks(in, copied, perMinute, ticks string) *topology.Topology {
	t := topology.New("windows-and-ticks")
	src := topology.Source(t, in, serde.String(), serde.String())
	topology.To(topology.MapValues(src, func(v string) (string, error) { return strings.ToUpper(v), nil }), copied, serde.String(), serde.String())
	counts := topology.GroupByKey(src, "by-key", serde.String(), serde.String()).
		WindowedBy(topology.TumblingWindows(time.Minute).WithGrace(0)).EmitFinal().Count("per-minute")
	text := topology.Map(counts, func(k topology.Windowed[string], n int64) (string, string, error) {
		return fmt.Sprintf("%s@%d", k.Key, k.Start.UnixMilli()), strconv.FormatInt(n, 10), nil
	})
	topology.To(text, perMinute, serde.String(), serde.String())
	ticker := topology.Process(src, "ticker", func(topology.Context[string, string], topology.Record[string, string]) error { return nil })
	topology.Punctuate(ticker, topology.WallClockTime, 50*time.Millisecond, func(ctx topology.Context[string, string], at time.Time) error {
		return ctx.Forward(topology.Record[string, string]{Key: "tick", Value: at.Format(time.RFC3339Nano), Timestamp: at})
	})
	topology.To(ticker, ticks, serde.String(), serde.String())
	return t
}

// Windowed results and punctuators' outputs have no single input: a run
// of a topology with both counts them apart, and every input still has its
// outcome once.
func TestOutcomesApartOfARun(t *testing.T) {
	e := enginetest.New(t)
	in, copied, perMinute, ticks, app := e.Name("in"), e.Name("copied"), e.Name("per-minute"), e.Name("ticks"), e.Name("app")
	for _, topic := range []string{in, copied, perMinute, ticks} {
		e.CreateTopic(topic, 1)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Minute)
	var rs []*kgo.Record
	for i := range 60 {
		rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", i%3), Value: fmt.Appendf(nil, "v%d", i), Timestamp: t0.Add(time.Duration(i) * 10 * time.Second)})
	}
	e.ProduceRecords(rs...)
	g, err := graph.Compile(windowsAndTicks(in, copied, perMinute, ticks))
	if err != nil {
		t.Fatal(err)
	}
	g = g.WithPrefix(app)
	r := e.Start(e.Config(app, "r1"), g)
	e.WaitCount(copied, 60, 60*time.Second)
	e.WaitCount(perMinute, 27, 60*time.Second) // 9 closed minutes of 3 keys
	e.WaitCount(ticks, 1, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	spec := verify.SpecOf(g, app+"-rejected")
	if len(spec.Windowed) != 1 || spec.Windowed[0] != perMinute || len(spec.MayDrop) != 0 {
		t.Fatalf("spec %+v", spec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := verify.Outcomes(ctx, e.Brokers, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep)
	if !rep.OK || rep.Input != 60 || rep.WithOutput != 60 || rep.Missing != 0 || rep.Doubled != 0 || rep.Unexpected != 0 ||
		rep.Windowed != 27 || rep.Punctuated == 0 || rep.Output != 60+27+rep.Punctuated {
		t.Fatalf("report %+v", rep)
	}
}
