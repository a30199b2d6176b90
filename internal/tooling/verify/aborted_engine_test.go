package verify_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// doubles doubles each int64 value; a value that is not 8 bytes is a
// poison record, rejected as undecodable.
func doubles(in, out string) *topology.Topology {
	t := topology.New("doubles")
	src := topology.Source(t, in, serde.String(), serde.Int64())
	topology.To(topology.MapValues(src, func(v int64) (int64, error) { return 2 * v, nil }), out, serde.String(), serde.Int64())
	return t
}

// A poison record's outcome is its rejection; an output copy written by a
// transaction that aborted is not read (read_committed), so it is no
// double.
func TestOutcomesPoisonAndAbortedCopy(t *testing.T) {
	e := enginetest.New(t)
	in, out, app := e.Name("in"), e.Name("out"), e.Name("app")
	e.CreateTopic(in, 1)
	e.CreateTopic(out, 1)
	var rs []*kgo.Record
	for i := range 20 {
		rs = append(rs, &kgo.Record{Topic: in, Key: []byte("k"), Value: binary.BigEndian.AppendUint64(nil, uint64(i))})
	}
	rs = append(rs, &kgo.Record{Topic: in, Key: []byte("k"), Value: []byte("bad")})
	e.ProduceRecords(rs...)
	g, err := graph.Compile(doubles(in, out))
	if err != nil {
		t.Fatal(err)
	}
	g = g.WithPrefix(app)
	r := e.Start(e.Config(app, "r1"), g)
	e.WaitCount(out, 20, 60*time.Second)
	e.WaitCount(app+"-rejected", 1, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	spec := verify.SpecOf(g, app+"-rejected")
	check := outcomeCheck(t, e, spec)
	if rep := check("run with a poison record"); !rep.OK || rep.Input != 21 || rep.WithOutput != 20 || rep.RejectedOnly != 1 {
		t.Fatalf("poison: %+v", rep)
	}

	// Every output written again by a transaction that aborts.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.Brokers...), kgo.TransactionalID(e.Name("txn")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, o := range e.Read(out) {
		var hs []kgo.RecordHeader
		for k, v := range o.Headers {
			hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: out, Partition: o.Partition, Key: o.Key, Value: o.Value, Headers: hs}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if rep := check("copies aborted"); !rep.OK || rep.Output != 20 || rep.Doubled != 0 {
		t.Fatalf("aborted copies counted: %+v", rep)
	}
}
