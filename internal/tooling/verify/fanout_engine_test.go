package verify_test

import (
	"context"
	"encoding/binary"
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

// fanOut writes every input record to two topics: upper-cased to one,
// lower-cased to the other. No stage may drop a record.
func fanOut(in, upper, lower string) *topology.Topology {
	t := topology.New("fan-out")
	src := topology.Source(t, in, serde.String(), serde.String())
	topology.To(topology.MapValues(src, func(v string) (string, error) { return strings.ToUpper(v), nil }), upper, serde.String(), serde.String())
	topology.To(topology.MapValues(src, func(v string) (string, error) { return strings.ToLower(v), nil }), lower, serde.String(), serde.String())
	return t
}

// An input of a fan-out has one outcome on each output it always
// reaches: losing its record on one output is a loss even though its
// record on the other output is there.
func TestOutcomesFanOutPartialLoss(t *testing.T) {
	e := enginetest.New(t)
	in, upper, lower, app := e.Name("in"), e.Name("upper"), e.Name("lower"), e.Name("app")
	for _, topic := range []string{in, upper, lower} {
		e.CreateTopic(topic, 1)
	}
	e.Produce(in, 0, 50)
	g, err := graph.Compile(fanOut(in, upper, lower))
	if err != nil {
		t.Fatal(err)
	}
	g = g.WithPrefix(app)
	r := e.Start(e.Config(app, "r1"), g)
	e.WaitCount(upper, 50, 60*time.Second)
	e.WaitCount(lower, 50, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	spec := verify.SpecOf(g, app+"-rejected")
	check := outcomeCheck(t, e, spec)
	if rep := check("correct run"); !rep.OK || rep.Input != 50 || rep.Output != 100 || rep.Missing != 0 {
		t.Fatalf("correct run: %+v", rep)
	}
	// A planted loss on one branch only: the first 5 records of lower.
	e.DeleteRecords(lower, map[int32]int64{0: e.StartOffsets(lower)[0] + 5})
	if rep := check("five outputs of one branch lost"); rep.OK || rep.Missing != 0 || rep.Partial != 5 {
		t.Fatalf("partial loss of a fan-out hidden: %+v", rep)
	}
}

// An input processed twice by a stateful topology writes its output
// twice with different values (the second on state that already holds
// the first): a double, though the two records differ.
func TestOutcomesReplayOnStateIsADouble(t *testing.T) {
	e := enginetest.New(t)
	in, out, app := e.Name("in"), e.Name("out"), e.Name("app")
	e.CreateTopic(in, 1)
	e.CreateTopic(out, 1)
	e.Produce(in, 0, 50)
	g, err := graph.Compile(balances(in, out))
	if err != nil {
		t.Fatal(err)
	}
	g = g.WithPrefix(app)
	r := e.Start(e.Config(app, "r1"), g)
	e.WaitCount(out, 50, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	spec := verify.SpecOf(g, app+"-rejected")
	check := outcomeCheck(t, e, spec)
	if rep := check("correct run"); !rep.OK {
		t.Fatalf("correct run: %+v", rep)
	}
	// The last output again, its running total counted twice: what a
	// replay outside the transaction that applied it writes.
	last := e.Read(out)[49]
	var hs []kgo.RecordHeader
	for k, v := range last.Headers {
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	doubled := binary.BigEndian.AppendUint64(nil, 2*binary.BigEndian.Uint64(last.Value))
	e.ProduceRecords(&kgo.Record{Topic: out, Partition: last.Partition, Key: last.Key, Value: doubled, Headers: hs})
	if rep := check("one input applied twice"); rep.OK || rep.Doubled != 1 || rep.Extra != 1 {
		t.Fatalf("a replay on state hidden: %+v", rep)
	}
}

// Inputs deleted by retention (or DeleteRecords) after they were
// processed leave outputs whose lineage names an offset below the input
// partition's log start: not a defect of the run, so not unexpected; the
// check still passes and counts them apart.
func TestOutcomesInputsGoneByRetention(t *testing.T) {
	e := enginetest.New(t)
	in, out, app := e.Name("in"), e.Name("out"), e.Name("app")
	e.CreateTopic(in, 1)
	e.CreateTopic(out, 1)
	e.Produce(in, 0, 50)
	g, err := graph.Compile(balances(in, out))
	if err != nil {
		t.Fatal(err)
	}
	g = g.WithPrefix(app)
	r := e.Start(e.Config(app, "r1"), g)
	e.WaitCount(out, 50, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	e.DeleteRecords(in, map[int32]int64{0: e.StartOffsets(in)[0] + 10})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := verify.Outcomes(ctx, e.Brokers, verify.SpecOf(g, app+"-rejected"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep)
	if !rep.OK || rep.Input != 40 || rep.WithOutput != 40 || rep.Unexpected != 0 || rep.InputGone != 10 {
		t.Fatalf("10 inputs gone by retention: %+v", rep)
	}
}
