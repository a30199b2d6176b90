//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package engine_test

import (
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
)

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

// A replica whose heartbeats stop reaching the coordinator (a one-way
// partition: its group connection goes dark, its producer's does not) is
// evicted when another replica joins, and does not learn it for as long as
// its heartbeat waits. Its wall-clock punctuator goes on firing for the
// tasks it lost; no record it punctuates after the new owner's session
// began may become visible: such a transaction consumed nothing, so it
// must prove the generation with the tasks' positions.
func TestZombiePunctuatorCannotCommit(t *testing.T) {
	env := enginetest.New(t)
	proxy := testproxy.New()
	defer proxy.Close()
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	env.CreateTopic(out, 1)
	env.Produce(in, 0, 100)

	cfgA := env.Config(app, "a")
	cfgA.Client.Dial = proxy.Dial
	a := env.Start(cfgA, compile(t, tickTopology(in, out, "a")))
	waitFor(t, "a to process the input", 60*time.Second, func() bool { return a.E.Stats().RecordsIn >= 100 })
	waitFor(t, "a's ticks", 60*time.Second, func() bool { return len(env.Read(out)) >= 10 })

	// Heartbeats go dark, and so does joining again once the old replica
	// learns it was fenced: anything it wrote later would be a new
	// member's work.
	proxy.Blackhole(keyJoinGroup, keyHeartbeat)
	b := env.Start(env.Config(app, "b"), compile(t, tickTopology(in, out, "b")))
	waitFor(t, "b to own both partitions", 60*time.Second, func() bool {
		return b.E.Ready() && len(env.Members(app)) == 1
	})
	owner := time.Now() // b's session began: a was evicted before
	ticksOf := func(tag string) (n int) {
		for _, r := range env.Read(out) {
			if string(r.Key) == tag {
				n++
			}
		}
		return n
	}
	waitFor(t, "b's ticks", 60*time.Second, func() bool { return ticksOf("b") >= 40 })
	// Twenty more intervals for the zombie, counted in the new owner's
	// committed ticks (one per interval for each of the two tasks).
	waitFor(t, "twenty more intervals of b's ticks", 60*time.Second, func() bool { return ticksOf("b") >= 80 })

	var late, order []string
	for _, r := range env.Read(out) {
		if string(r.Key) == "a" && r.Timestamp.After(owner) {
			late = append(late, string(r.Value))
		}
		if len(order) < 40 && r.Timestamp.After(owner) {
			order = append(order, string(r.Value))
		}
	}
	if len(late) > 0 {
		t.Errorf("%d ticks the evicted replica punctuated after the new owner's session began became visible: %v; the output after the takeover: %v",
			len(late), late[:min(len(late), 10)], order)
	}
	if got := a.E.Stats().Aborted; got == 0 {
		t.Errorf("the evicted replica aborted no transaction: it was never refused")
	}
	proxy.Heal()
	b.Stop()
	a.Stop()
	if got, want := env.CommittedOffsets(app, in), env.EndOffsets(in); !maps.Equal(got, want) {
		t.Errorf("committed offsets %v, want the end offsets %v: the positions the punctuations committed again were not the group's", got, want)
	}
	t.Logf("zombie stats %+v; new owner stats %+v", a.E.Stats(), b.E.Stats())
}
