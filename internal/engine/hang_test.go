package engine_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/enginetest"
)

// The coordinator describes the replica's transactional id with a
// transaction Ongoing for an hour, five checks in a row (the embedded
// broker's answer is replaced): each check counts a hanging transaction,
// the first three create the producer again (which fences the id and
// aborts the transaction), the next two only report it, and once the
// coordinator answers truthfully the replica goes on. Output stays exactly
// once.
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
	var described, faked atomic.Int32
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.DescribeTransactions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.DescribeTransactionsRequest)
		described.Add(1)
		if len(r.TransactionalIDs) != 1 || r.TransactionalIDs[0] != app+"-r1" || faked.Load() >= hanging {
			return nil, nil, false
		}
		faked.Add(1)
		resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = r.TransactionalIDs[0]
		st.State = "Ongoing"
		st.StartTimestamp = time.Now().Add(-time.Hour).UnixMilli()
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
	for described.Load() < hanging+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d describes after 60 s; stats %+v", described.Load(), r.E.Stats())
		}
		env.Produce(in, produced, 10)
		produced += 10
		time.Sleep(50 * time.Millisecond)
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
