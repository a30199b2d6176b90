package engine_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/enginetest"
)

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func recv(t *testing.T, what string, ch <-chan struct{}, within time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(within):
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// A replica stalls with a batch in hand, before its transaction begins,
// while the group moves on without it. When it wakes it processes the batch
// in a fresh transaction, but its generation is stale: the offsets are
// refused, the transaction aborts, and its output never becomes visible;
// the new owner's output is all there is.
func TestZombieWithStaleGenerationCannotCommit(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	env.Produce(in, 0, 400)
	g := compile(t, copyex.Topology(in, out))

	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	cfgA := env.Config(app, "a")
	cfgA.Hooks.BeforeBegin = func() {
		if armed.CompareAndSwap(true, false) {
			close(held)
			<-release
		}
	}
	a := env.Start(cfgA, g)
	env.WaitCount(out, 400, 60*time.Second)
	armed.Store(true)
	env.Produce(in, 400, 400)
	recv(t, "the replica to stall before its transaction", held, 30*time.Second)

	b := env.Start(env.Config(app, "b"), g)
	// b owns everything once a missed the rebalance, and processes the
	// records whose transaction a has not committed.
	waitFor(t, "b to process the stalled records", 60*time.Second, func() bool { return b.E.Stats().RecordsIn >= 400 })
	close(release)
	waitFor(t, "the zombie to abort", 30*time.Second, func() bool { return a.E.Stats().Aborted >= 1 })

	env.WaitCount(out, 800, 60*time.Second)
	b.Stop()
	a.Stop()
	rep := env.Verify(in, out)
	if rep.Output != 800 {
		t.Errorf("output %d, want 800", rep.Output)
	}
	if s := a.E.Stats(); s.ProducerRecreations != 0 {
		t.Errorf("the zombie was fenced by its producer (%+v), not by its stale generation", s)
	}
	t.Logf("zombie stats %+v; new owner stats %+v", a.E.Stats(), b.E.Stats())
}

// A replica's EndTxn is held by the broker after its offsets were sent;
// the partitions move to a new owner, whose offset fetch must wait
// (RequireStable) for that commit instead of starting from older offsets
// and doubling the transaction's output.
func TestNewOwnerWaitsForPendingCommit(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("holds EndTxn with the embedded broker's request control")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	env.Produce(in, 0, 400)
	g := compile(t, copyex.Topology(in, out))
	cfgA := env.Config(app, "a")
	// The held transaction must outlive the rebalance that moves its
	// partitions, or the broker times it out and nothing is pending.
	cfgA.Timeouts.Transaction = 30 * time.Second
	a := env.Start(cfgA, g)
	env.WaitCount(out, 400, 60*time.Second)

	c := env.Broker.Cluster()
	held, release := make(chan struct{}), make(chan struct{})
	var fetchesAfterHold atomic.Int32
	var holding atomic.Bool
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.EndTxnRequest)
		if r.TransactionalID == app+"-a" && r.Commit && holding.CompareAndSwap(false, true) {
			close(held)
			c.SleepControl(func() { <-release })
			return nil, nil, false
		}
		c.KeepControl()
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.OffsetFetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		if holding.Load() {
			fetchesAfterHold.Add(1)
		}
		c.KeepControl()
		return nil, nil, false
	})
	env.Produce(in, 400, 400)
	recv(t, "a commit to be held", held, 30*time.Second)

	b := env.Start(env.Config(app, "b"), g)
	// b's first fetch is answered UNSTABLE_OFFSET_COMMIT; it asks again.
	waitFor(t, "b to retry its offset fetch", 60*time.Second, func() bool { return fetchesAfterHold.Load() >= 2 })
	if b.E.Ready() {
		t.Fatal("b started processing while a's commit was pending")
	}
	close(release)
	env.WaitCount(out, 800, 60*time.Second)
	env.Produce(in, 800, 200)
	env.WaitCount(out, 1000, 60*time.Second)
	b.Stop()
	a.Stop()
	env.Verify(in, out)
}
