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

// A transaction coordinator that answers commits slowly (each EndTxn held
// for 60 % of the commit timeout, three times) makes the replica shrink its
// transactions, once per slow commit, to an eighth of the configured
// records and interval; once commits are fast again it grows them back,
// step by step, to the configured size. Output stays exactly once.
func TestSlowCommitsShrinkTransactions(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("holds EndTxn with the embedded broker's request control")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	cfg := env.Config(app, "r1")
	cfg.Timeouts.Transaction = 2 * time.Second
	cfg.Timeouts.Commit = time.Second
	cfg.CommitInterval = 200 * time.Millisecond
	cfg.CommitRecords = 800
	const slow = 3
	var held atomic.Int32
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if r := req.(*kmsg.EndTxnRequest); r.TransactionalID == app+"-r1" && r.Commit && held.Load() < slow {
			held.Add(1)
			c.SleepControl(func() { time.Sleep(600 * time.Millisecond) }) // the fault: a slow commit
		}
		return nil, nil, false
	})
	r := env.Start(cfg, compile(t, copyex.Topology(in, out)))
	r.WaitReady(t, 30*time.Second)

	produced := 0
	feed := func(until func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !until() {
			if time.Now().After(deadline) {
				t.Fatalf("after %d records: %+v", produced, r.E.Status())
			}
			env.Produce(in, produced, 5)
			produced += 5
			time.Sleep(10 * time.Millisecond) // the load's pace: records keep coming until the condition holds
		}
	}
	feed(func() bool { return r.E.Stats().TransactionShrinks >= slow })
	st := r.E.Status()
	if st.TxnRecords != 100 || st.TxnInterval != 25*time.Millisecond || !st.TxnShrunk {
		t.Errorf("after %d slow commits: %d records, %v (shrunk %v); want 100, 25ms", slow, st.TxnRecords, st.TxnInterval, st.TxnShrunk)
	}
	feed(func() bool { return r.E.Stats().TransactionGrows >= slow })
	st = r.E.Status()
	if st.TxnRecords != 800 || st.TxnInterval != 200*time.Millisecond || st.TxnShrunk {
		t.Errorf("grown back: %d records, %v (shrunk %v); want 800, 200ms", st.TxnRecords, st.TxnInterval, st.TxnShrunk)
	}
	env.WaitCount(out, produced, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if s := r.E.Stats(); s.TransactionShrinks != slow || s.TransactionGrows != slow || s.Aborted != 0 {
		t.Errorf("shrinks %d, grows %d, aborts %d; want %d, %d, 0", s.TransactionShrinks, s.TransactionGrows, s.Aborted, slow, slow)
	}
	env.Verify(in, out)
}
