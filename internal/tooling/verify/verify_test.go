package verify_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

type env struct {
	t       *testing.T
	ctx     context.Context
	brokers []string
}

func newEnv(t *testing.T, topics map[string]int32) *env {
	t.Helper()
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, brokers: b.Addrs()}
	cl := e.client()
	defer cl.Close()
	for name, n := range topics {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, n, -1, nil, name); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	return e
}

func (e *env) client(opts ...kgo.Opt) *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.brokers...)}, opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	return cl
}

// produceManual writes records to the partitions they name (idempotent, not transactional) and returns them
// with their partitions and offsets set.
func (e *env) produceManual(rs ...*kgo.Record) []*kgo.Record {
	e.t.Helper()
	cl := e.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	res := cl.ProduceSync(e.ctx, rs...)
	if err := res.FirstErr(); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
	return rs
}

// txnManual writes records to the partitions they name in one transaction with the given transactional id,
// then commits or aborts it. With neither (end == nil) it leaves the
// transaction open and returns the client; the caller closes it.
func (e *env) txnManual(id string, end *kgo.TransactionEndTry, rs ...*kgo.Record) *kgo.Client {
	e.t.Helper()
	cl := e.client(kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		e.t.Fatal(err)
	}
	if err := cl.ProduceSync(e.ctx, rs...).FirstErr(); err != nil {
		e.t.Fatalf("produce in %s: %v", id, err)
	}
	if end == nil {
		return cl
	}
	defer cl.Close()
	if err := cl.EndTransaction(e.ctx, *end); err != nil {
		e.t.Fatalf("end %s: %v", id, err)
	}
	return nil
}

var (
	commit, abort       = kgo.TryCommit, kgo.TryAbort
	tryCommit, tryAbort = &commit, &abort
)

func rec(topic string, p int32, value string, headers ...string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: headers[i], Value: []byte(headers[i+1])})
	}
	return r
}

// copyOf is the output the copy topology would write for input r.
func copyOf(r *kgo.Record, value ...string) *kgo.Record {
	v := string(r.Value)
	if len(value) > 0 {
		v = value[0]
	}
	return rec("out", r.Partition%2, v, wire.HeaderSource, wire.Source(r.Topic, r.Partition, r.Offset))
}

func TestLineage(t *testing.T) {
	e := newEnv(t, map[string]int32{"in": 3, "out": 2})
	// Inputs: 30 plain records, an aborted transaction of 5 that must not
	// count, then a committed transaction of 3, so every input partition
	// ends with transaction markers.
	var plain []*kgo.Record
	for i := range 30 {
		plain = append(plain, rec("in", int32(i%3), fmt.Sprintf("v%d", i)))
	}
	inputs := e.produceManual(plain...)
	var aborted, committed []*kgo.Record
	for i := range 5 {
		aborted = append(aborted, rec("in", int32(i%3), fmt.Sprintf("aborted%d", i)))
	}
	for i := range 3 {
		committed = append(committed, rec("in", int32(i), fmt.Sprintf("c%d", i)))
	}
	e.txnManual("in-a", tryAbort, aborted...)
	e.txnManual("in-c", tryCommit, committed...)
	inputs = append(inputs, committed...)

	got, err := verify.ReadAll(e.ctx, e.brokers, "in")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(inputs) {
		t.Fatalf("ReadAll(in) = %d records, want %d", len(got), len(inputs))
	}
	for _, r := range got {
		if strings.HasPrefix(string(r.Value), "aborted") {
			t.Fatalf("aborted record read: %+v", r)
		}
	}

	// Outputs, committed: a copy of every input except inputs[5], a second
	// copy of inputs[7], one record without lineage, and a copy of
	// inputs[8] with a changed value (inputs[8] also has a good copy).
	var good []*kgo.Record
	for i, r := range inputs {
		if i != 5 {
			good = append(good, copyOf(r))
		}
	}
	good = append(good, copyOf(inputs[7]), rec("out", 0, "no lineage"), copyOf(inputs[8], "changed"))
	e.txnManual("out-1", tryCommit, good...)
	// Outputs, aborted: they would fix the missing one and add duplicates;
	// they must not count. The output topic ends with abort markers.
	e.txnManual("out-2", tryAbort, copyOf(inputs[5]), copyOf(inputs[0]), copyOf(inputs[0]))

	rep, err := verify.Lineage(e.ctx, e.brokers, "in", "out")
	if err != nil {
		t.Fatal(err)
	}
	want := verify.Report{Input: 33, Output: 32 + 3, Missing: 1, Duplicates: 1, Unexpected: 2}
	if rep != want {
		t.Fatalf("Lineage = %+v, want %+v", rep, want)
	}
	t.Log(rep)

	// Committing the fix makes the check pass except for the committed extras.
	e.txnManual("out-3", tryCommit, copyOf(inputs[5]))
	rep, err = verify.Lineage(e.ctx, e.brokers, "in", "out")
	if err != nil {
		t.Fatal(err)
	}
	if want := (verify.Report{Input: 33, Output: 36, Duplicates: 1, Unexpected: 2}); rep != want {
		t.Fatalf("after the fix: Lineage = %+v, want %+v", rep, want)
	}
}

func TestReadAllDoesNotWaitLongForOpenTransaction(t *testing.T) {
	e := newEnv(t, map[string]int32{"t": 1})
	e.produceManual(rec("t", 0, "a"), rec("t", 0, "b"))
	open := e.txnManual("open", nil, rec("t", 0, "pending"))
	defer open.Close()
	e.produceManual(rec("t", 0, "after")) // past the last stable offset

	// The transaction stays open: the read waits at most half of its
	// context's time left, then reads to the last stable offset.
	ctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	got, err := verify.ReadAll(ctx, e.brokers, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].Value) != "a" || string(got[1].Value) != "b" {
		t.Fatalf("ReadAll = %+v, want a and b", got)
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Fatalf("ReadAll took %v with a transaction left open, want about half of its 3 s", took)
	}
}

// A transaction that had written before the read and commits a moment
// later (its markers land after the group's offsets, as an exactly-once
// replica's do) is read whole, not counted missing.
func TestReadAllWaitsForTransactionOpenAtTheStart(t *testing.T) {
	e := newEnv(t, map[string]int32{"t": 2})
	e.produceManual(rec("t", 0, "a"), rec("t", 1, "b"))
	open := e.txnManual("open", nil, rec("t", 0, "pending0"), rec("t", 1, "pending1"))
	defer open.Close()
	committed := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // the scenario: still open when ReadAll starts
		committed <- open.EndTransaction(e.ctx, kgo.TryCommit)
	}()

	got, err := verify.ReadAll(e.ctx, e.brokers, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := <-committed; err != nil {
		t.Fatalf("commit: %v", err)
	}
	var values []string
	for _, r := range got {
		values = append(values, string(r.Value))
	}
	if len(got) != 4 {
		t.Fatalf("ReadAll = %v, want a, b and both records of the transaction that committed during the read", values)
	}
}

func TestReadAllHeadersAndEmpty(t *testing.T) {
	e := newEnv(t, map[string]int32{"h": 2, "empty": 4})
	e.produceManual(rec("h", 1, "v", "event-id", "e1", "version", "7"))
	got, err := verify.ReadAll(e.ctx, e.brokers, "h")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Headers["event-id"] != "e1" || got[0].Headers["version"] != "7" ||
		got[0].Topic != "h" || got[0].Partition != 1 || got[0].Offset != 0 || got[0].Timestamp.IsZero() {
		t.Fatalf("ReadAll(h) = %+v", got)
	}
	got, err = verify.ReadAll(e.ctx, e.brokers, "empty")
	if err != nil || len(got) != 0 {
		t.Fatalf("ReadAll(empty) = %v, %v", got, err)
	}
}

func TestReadAllMissingTopic(t *testing.T) {
	e := newEnv(t, nil)
	_, err := verify.ReadAll(e.ctx, e.brokers, "nope")
	if !errors.Is(err, verify.ErrTopicNotFound) || err.Error() != `verify: topic "nope" does not exist` {
		t.Fatalf("err = %v", err)
	}
	_, err = verify.Lineage(e.ctx, e.brokers, "nope", "nope2")
	if !errors.Is(err, verify.ErrTopicNotFound) {
		t.Fatalf("Lineage err = %v", err)
	}
}
