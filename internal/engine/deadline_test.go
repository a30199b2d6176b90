//go:build !race && (cluster || !cluster)

// `make test-cluster` runs this file's tests on three brokers too: the tag
// marks the file for scripts/test-tagged.sh, the constraint always holds.

// These tests hang sarama's transactional producer on purpose; on its
// error paths sarama has a data race of its own (see
// producer_errors_test.go), so they run in the race-free pass.

package engine_test

import (
	"testing"
	"time"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
)

// commitDeadline is the commit timeout of these tests: far below the test
// configuration's 25 s transaction timeout and sarama's 35 s read timeout.
const commitDeadline = 2 * time.Second

// The transaction coordinator stops answering in the middle of a commit
// (the proxy swallows AddOffsetsToTxn/TxnOffsetCommit/EndTxn and everything
// after it on that connection). The replica gives up on the commit at its
// deadline, drops its producer, creates another with the same
// transactional id (which fences the hung one and aborts its
// transaction), rewinds, and once the coordinator answers again every
// input is in the output exactly once.
func TestHungCoordinatorCommitTimesOut(t *testing.T) {
	env := enginetest.New(t)
	proxy := testproxy.New()
	defer proxy.Close()
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	cfg := env.Config(app, "a")
	cfg.Client.Dial = proxy.Dial
	cfg.Timeouts.Commit = commitDeadline
	a := env.Start(cfg, compile(t, copyex.Topology(in, out)))
	a.WaitReady(t, 30*time.Second)
	env.Produce(in, 0, 500)
	env.WaitCount(out, 500, 60*time.Second)

	proxy.Blackhole(testproxy.CommitKeys...)
	env.Produce(in, 500, 500)
	waitFor(t, "a commit to hang", 30*time.Second, func() bool { return proxy.Darkened() >= 1 })
	hung := time.Now()
	waitFor(t, "the replica to give up on the hung commit", 60*time.Second, func() bool { return a.E.Stats().ProducerRecreations >= 1 })
	took := time.Since(hung)
	t.Logf("the replica gave up on the hung commit after %v (deadline %v)", took.Round(time.Millisecond), commitDeadline)
	if took > commitDeadline+2*time.Second {
		t.Errorf("the replica gave up on the hung commit after %v; deadline %v", took, commitDeadline)
	}
	proxy.Heal()
	env.WaitCount(out, 1000, 60*time.Second)
	if err := a.Stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	rep := env.Verify(in, out)
	if rep.Input != 1000 || rep.Output != 1000 {
		t.Errorf("input %d, output %d; want 1000 each", rep.Input, rep.Output)
	}
	t.Logf("stats %+v", a.E.Stats())
}

// A replica asked to stop while its transaction coordinator hangs returns
// within StopBound, with nil; restarted, it finishes the input and nothing
// is lost or doubled.
func TestStopWithHungCoordinatorIsBounded(t *testing.T) {
	env := enginetest.New(t)
	proxy := testproxy.New()
	defer proxy.Close()
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	g := compile(t, copyex.Topology(in, out))
	cfg := env.Config(app, "a")
	cfg.Client.Dial = proxy.Dial
	cfg.Timeouts.Commit = commitDeadline
	a := env.Start(cfg, g)
	a.WaitReady(t, 30*time.Second)
	env.Produce(in, 0, 500)
	env.WaitCount(out, 500, 60*time.Second)

	proxy.Blackhole(testproxy.CommitKeys...)
	env.Produce(in, 500, 500)
	waitFor(t, "a commit to hang", 30*time.Second, func() bool { return proxy.Darkened() >= 1 })
	bound := engine.StopBound(cfg.Timeouts)
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop() }()
	select {
	case err := <-stopped:
		took := time.Since(start)
		t.Logf("stopped %v after the cancel (bound %v): %v", took.Round(time.Millisecond), bound, err)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(bound + 5*time.Second):
		t.Fatalf("Run has not returned %v after its context ended; bound %v", bound+5*time.Second, bound)
	}

	proxy.Heal()
	// The same instance id: its new producer aborts the hung transaction
	// at once (another id would wait for the transaction timeout).
	b := env.Start(env.Config(app, "a"), g)
	b.WaitReady(t, 60*time.Second)
	env.WaitCount(out, 1000, 60*time.Second)
	b.Stop()
	rep := env.Verify(in, out)
	if rep.Input != 1000 || rep.Output != 1000 {
		t.Errorf("input %d, output %d; want 1000 each", rep.Input, rep.Output)
	}
}
