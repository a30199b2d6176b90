package verify_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

// outcomesOf simulates the orders topology over recs as a partition
// delivers them (ReadAll's order keeps each customer's order).
func outcomesOf(recs []verify.Record) []gen.OrderOutcome {
	sim := gen.NewOrdersSimulator()
	out := make([]gen.OrderOutcome, len(recs))
	for i, r := range recs {
		out[i] = sim.Apply(string(r.Key), r.Headers[gen.HeaderEventID], r.Value)
	}
	return out
}

// The test plays the orders topology on the embedded broker: it writes
// smallInput, then the right outputs and rejections in a committed
// transaction and wrong ones in an aborted transaction, which must not
// count. Then a second output with one output missing and another doubled
// fails the check although the counts match.
func TestCheckTruth(t *testing.T) {
	e := newEnv(t, map[string]int32{"in": 3, "out": 2, "rej": 1, "out-bad": 2, "rej-bad": 1})
	// Part of the input in a transaction, so the input ends with a marker.
	recs := smallInputRecords("in")
	e.produceManual(recs[:6]...)
	e.txnManual("input", tryCommit, recs[6:]...)
	in, err := verify.ReadAll(e.ctx, e.brokers, "in")
	if err != nil {
		t.Fatal(err)
	}
	outcomes := outcomesOf(in)
	for i, r := range in { // the hand-checked table, in read order
		j := slices.IndexFunc(recs, func(k *kgo.Record) bool { return k.Partition == r.Partition && k.Offset == r.Offset })
		if j < 0 || outcomes[i] != smallInput[j].want {
			t.Fatalf("input %d/%d: outcome %+v, smallInput[%d]", r.Partition, r.Offset, outcomes[i], j)
		}
	}

	out, rej := playOrders(in, outcomes, "out", "rej")
	e.txnManual("orders-1", tryCommit, append(slices.Clone(out), rej...)...)
	// An attempt that aborted: every record again, with wrong totals.
	var again []*kgo.Record
	for _, r := range append(slices.Clone(out), rej...) {
		c := clone(r)
		if c.Topic == "out" {
			c.Value = []byte{0, 0, 0, 0, 0, 0, 0, 1}
		}
		again = append(again, c)
	}
	e.txnManual("orders-1", tryAbort, again...)

	rep, err := verify.CheckTruth(e.ctx, e.brokers, smallTruth, "in", "out", "rej")
	if err != nil {
		t.Fatal(err)
	}
	want := verify.TruthReport{
		Input: 10, Output: 6, Rejected: map[string]int{"duplicate": 2, "conflict": 1, "stale": 1},
		ExpectedInput: 10, ExpectedAccepted: 6, ExpectedRejected: map[string]int{"duplicate": 2, "conflict": 1, "stale": 1},
		InputMatch: true, AcceptedMatch: true, RejectionsMatch: true, TotalsMatch: true, Customers: 3, OK: true,
	}
	if !reflect.DeepEqual(rep, want) {
		t.Fatalf("report\n%+v\nwant\n%+v", rep, want)
	}
	t.Log(rep)

	// Broken: c-1's last output (total 170) missing, c-2's first doubled.
	bad, badRej := playOrders(in, outcomes, "out-bad", "rej-bad")
	last := slices.IndexFunc(bad, func(r *kgo.Record) bool { return string(r.Value) == string([]byte{0, 0, 0, 0, 0, 0, 0, 170}) })
	bad = slices.Delete(bad, last, last+1)
	first := slices.IndexFunc(bad, func(r *kgo.Record) bool { return string(r.Key) == "c-2" })
	bad = slices.Insert(bad, first+1, clone(bad[first]))
	e.txnManual("orders-2", tryCommit, append(bad, badRej...)...)

	rep, err = verify.CheckTruth(e.ctx, e.brokers, smallTruth, "in", "out-bad", "rej-bad")
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Missing != 1 || rep.Duplicates != 1 || rep.Unexpected != 0 || !rep.AcceptedMatch || rep.TotalsMatch ||
		!rep.RejectionsMatch || !reflect.DeepEqual(rep.TotalsExamples, []string{`"c-1": last output 150, want 170`}) {
		t.Fatalf("broken output: report %+v", rep)
	}
	if s := rep.String(); !strings.Contains(s, "FAILED (totals, missing, duplicates)") {
		t.Errorf("String() = %q", s)
	}
	t.Log(rep)

	if _, err := verify.CheckTruth(e.ctx, e.brokers, smallTruth, "in", "out", "nope"); !errors.Is(err, verify.ErrTopicNotFound) {
		t.Fatalf("missing rejected topic: err = %v", err)
	}
}

// The generator and the checker agree: a topology that does what the
// simulation says passes the check of the generator's truth, and one that
// lets a replay through fails it.
func TestCheckTruthOfGenerated(t *testing.T) {
	e := newEnv(t, map[string]int32{"out": 4, "rej": 2})
	truth, err := gen.ProduceOrders(e.ctx, gen.OrdersConfig{
		Brokers: e.brokers, Topic: "orders", Events: 3000, Partitions: 3, Customers: 50,
		DuplicateRate: 0.1, ConflictRate: 0.02, OutOfOrderRate: 0.05, Seed: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	in, err := verify.ReadAll(e.ctx, e.brokers, "orders")
	if err != nil {
		t.Fatal(err)
	}
	outcomes := outcomesOf(in)
	out, rej := playOrders(in, outcomes, "out", "rej")
	for i := range out {
		out[i].Partition = out[i].Partition*2 + int32(out[i].Key[len(out[i].Key)-2]%2) // spread over 4
	}
	for i := range rej {
		rej[i].Partition = int32(i % 2)
	}
	all := append(out, rej...)
	for start := 0; start < len(all); start += 500 { // several transactions, as an engine commits
		e.txnManual("orders", tryCommit, all[start:min(start+500, len(all))]...)
	}
	rep, err := verify.CheckTruth(e.ctx, e.brokers, truth, "orders", "out", "rej")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Output != truth.Accepted || rep.Rejected[wire.ReasonDuplicate] != 300 || rep.Rejected[wire.ReasonStale] != 150 {
		t.Fatalf("report %+v", rep)
	}
	t.Log(rep)

	// A duplicate let through: its output comes after the customer's
	// last one and repeats an earlier total.
	i := slices.IndexFunc(outcomes, func(o gen.OrderOutcome) bool { return o.Reason == wire.ReasonDuplicate })
	leak := &kgo.Record{Topic: "out", Partition: out[0].Partition, Key: in[i].Key, Value: []byte{0, 0, 0, 0, 0, 0, 0, 1},
		Headers: []kgo.RecordHeader{{Key: wire.HeaderSource, Value: []byte(wire.Source("orders", in[i].Partition, in[i].Offset))}}}
	for _, r := range out {
		if string(r.Key) == string(in[i].Key) {
			leak.Partition = r.Partition
		}
	}
	e.txnManual("orders", tryCommit, leak)
	rep, err = verify.CheckTruth(e.ctx, e.brokers, truth, "orders", "out", "rej")
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Duplicates != 1 || rep.AcceptedMatch || rep.TotalsMatch || rep.TotalsMismatched != 1 {
		t.Fatalf("after a leaked duplicate: report %+v", rep)
	}
}
