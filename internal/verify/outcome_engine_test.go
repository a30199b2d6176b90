package verify_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/compile"
	"github.com/onceflow/onceflow/internal/enginetest"
	"github.com/onceflow/onceflow/internal/verify"
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
	g, err := compile.Graph(balances(in, out))
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
	check := func(what string) verify.OutcomeReport {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rep, err := verify.Outcomes(ctx, e.Brokers, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", what, rep)
		return rep
	}

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
