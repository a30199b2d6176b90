//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package engine_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// The coordinator describes the replica's transactional id with one
// transaction Ongoing (the embedded broker's answer is replaced), check
// after check, until the replica counted five hanging: the checks that see
// it open past the transaction timeout plus the grace (by the replica's
// clock, from the first that saw it) count a hanging transaction, the
// first three create the producer again (which fences the id and aborts
// the transaction), the next two only report it, and once the coordinator
// answers truthfully the replica goes on. Output stays exactly once.
func TestHangingTransactionIsFencedBounded(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("fakes DescribeTransactions answers with the embedded broker's request control")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	cfg := env.Config(app, "r1")
	cfg.Timeouts.Transaction = time.Second // a check every second
	cfg.Timeouts.Commit = 500 * time.Millisecond
	const hanging = 5
	var described atomic.Int32
	var replica atomic.Pointer[enginetest.Replica]
	start := time.Now().Add(-time.Hour).UnixMilli()
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.DescribeTransactions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.DescribeTransactionsRequest)
		described.Add(1)
		rep := replica.Load()
		if len(r.TransactionalIDs) != 1 || r.TransactionalIDs[0] != app+"-r1" || rep == nil || rep.E.Stats().HangingTransactions >= hanging {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = r.TransactionalIDs[0]
		st.State = "Ongoing"
		st.StartTimestamp = start
		st.TimeoutMillis = 1000
		st.ProducerID, st.ProducerEpoch = 4242, 7
		topic := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
		topic.Topic, topic.Partitions = out, []int32{0}
		st.Topics = append(st.Topics, topic)
		resp.TransactionStates = append(resp.TransactionStates, st)
		return resp, nil, true
	})
	r := env.Start(cfg, compile(t, copyex.Topology(in, out)))
	replica.Store(r)
	r.WaitReady(t, 30*time.Second)
	produced := 0
	// About 31 checks see it open before it counts as hanging; then two
	// truthful answers.
	deadline := time.Now().Add(120 * time.Second)
	truthful := int32(-1)
	for truthful < 0 || described.Load() < truthful+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d describes after 120 s; stats %+v", described.Load(), r.E.Stats())
		}
		if truthful < 0 && r.E.Stats().HangingTransactions >= hanging {
			truthful = described.Load()
		}
		env.Produce(in, produced, 10)
		produced += 10
		time.Sleep(50 * time.Millisecond) // the load's pace: input keeps coming until enough hang checks have run
	}
	env.WaitCount(out, produced, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	s := r.E.Stats()
	if s.HangingTransactions != hanging || s.HangRecoveries != 3 {
		t.Errorf("hanging transactions %d, recoveries %d; want %d, 3 (bounded)", s.HangingTransactions, s.HangRecoveries, hanging)
	}
	if s.ProducerRecreations < 3 {
		t.Errorf("producer recreations %d, want at least 3", s.ProducerRecreations)
	}
	env.Verify(in, out)
}

// The coordinator's clock is an hour behind the replica's: it stamps each
// transaction's start an hour early. A busy replica has a transaction
// open at nearly every check, each begun just after the previous EndTxn,
// so its age by the replica's clock minus the coordinator's stamp is an
// hour; none is hanging, and none may be recovered (each recovery drops
// the producer and rewinds the session).
func TestClockSkewIsNoHangingTransaction(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("shifts DescribeTransactions answers with the embedded broker's request control")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	cfg := env.Config(app, "r1")
	cfg.Timeouts.Transaction = time.Second // a check every second
	cfg.Timeouts.Commit = 500 * time.Millisecond
	const skew = time.Hour
	id := app + "-r1"
	var described atomic.Int32
	var began atomic.Int64 // when the current transaction began: the last EndTxn, by the coordinator's clock
	began.Store(time.Now().Add(-skew).UnixMilli())
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if req.(*kmsg.EndTxnRequest).TransactionalID == id {
			began.Store(time.Now().Add(-skew).UnixMilli())
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.DescribeTransactions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.DescribeTransactionsRequest)
		if len(r.TransactionalIDs) != 1 || r.TransactionalIDs[0] != id {
			return nil, nil, false
		}
		described.Add(1)
		resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.State = "Ongoing"
		st.StartTimestamp = began.Load()
		st.TimeoutMillis = 1000
		st.ProducerID, st.ProducerEpoch = 4242, 7
		topic := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
		topic.Topic, topic.Partitions = out, []int32{0}
		st.Topics = append(st.Topics, topic)
		resp.TransactionStates = append(resp.TransactionStates, st)
		return resp, nil, true
	})
	r := env.Start(cfg, compile(t, copyex.Topology(in, out)))
	r.WaitReady(t, 30*time.Second)
	produced := 0
	deadline := time.Now().Add(60 * time.Second)
	for described.Load() < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("%d describes after 60 s; stats %+v", described.Load(), r.E.Stats())
		}
		env.Produce(in, produced, 10)
		produced += 10
		time.Sleep(50 * time.Millisecond) // the load's pace: input keeps coming until enough hang checks have run
	}
	env.WaitCount(out, produced, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if s := r.E.Stats(); s.HangingTransactions != 0 || s.HangRecoveries != 0 || s.ProducerRecreations != 0 {
		t.Errorf("a busy replica whose coordinator's clock is %v behind: %d hanging transactions, %d recoveries, %d producers created again; want none",
			skew, s.HangingTransactions, s.HangRecoveries, s.ProducerRecreations)
	}
	env.Verify(in, out)
}
