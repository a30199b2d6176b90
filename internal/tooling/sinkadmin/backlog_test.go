package sinkadmin_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// The sink backlog is visible: once the runner has delivered every
// request, sinks status shows nothing unread and nothing pending, and the
// lag of the runners' group on the outbox is 0 (the outbox is written in
// transactions: the commit markers after the committed offsets are not
// lag). With the runner stopped, the requests written since are the
// backlog, counted exactly, by status and by lag.
func TestSinkBacklogIsVisible(t *testing.T) {
	env := enginetest.New(t)
	in, app := env.Name("in"), env.Name("shop")
	env.CreateTopic(in, 2)
	var delivered atomic.Int64
	tp := topology.New("shop")
	src := topology.Source(tp, in, serde.String(), serde.String())
	topology.ToSink(src, "hook", sinks.Func(func(context.Context, sinks.Delivery) error {
		delivered.Add(1)
		return nil
	}), serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	env.Start(env.Config(app, "r1"), g)
	ecfg := env.Config(app, "s1")
	runner, err := sinkrunner.New(sinkrunner.Config{Client: ecfg.Client, Timeouts: ecfg.Timeouts, AppID: app, InstanceID: "s1",
		Sinks:  sinks.RunnerConfig{CommitInterval: 50 * time.Millisecond},
		Logger: hclog.New(&hclog.LoggerOptions{Name: "s1", Level: hclog.Warn})}, g.WithPrefix(app))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stopRunner := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- runner.Run(rctx) }()
	t.Cleanup(stopRunner)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	outbox := app + "-sink-hook"
	status := func() sinkadmin.Status {
		t.Helper()
		sts, err := sinkadmin.StatusOf(ctx, env.Brokers, app, []string{"hook"})
		if err != nil || len(sts) != 1 {
			t.Fatalf("status: %v %v", sts, err)
		}
		return sts[0]
	}
	lag := func() verify.Progress {
		t.Helper()
		p, err := verify.GroupProgress(ctx, env.Brokers, sinkadmin.RunnerGroup(app), outbox)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		enginetest.WaitFor(t, what, 20*time.Second, cond)
	}

	// Delivered in several transactions (each batch delivered before the
	// next is written): every one leaves a marker.
	for i := range 4 {
		env.Produce(in, i*50, 50)
		n := int64((i + 1) * 50)
		waitFor("the batch delivered", func() bool { return delivered.Load() >= n })
	}
	waitFor("200 deliveries", func() bool { return delivered.Load() >= 200 })
	var last verify.Progress
	waitFor("the runner to commit past every request", func() bool {
		last = lag()
		t.Logf("after every delivery: %+v", last)
		return last.Lag == 0
	})
	st := status()
	if st.Unread != 0 || st.States["pending"] != 0 || st.Deliveries != 200 || st.UnreadEstimated {
		t.Errorf("all delivered: status %+v, want 200 deliveries, 0 unread, 0 pending", st)
	}
	if p := lag(); p.Committed >= p.Stable {
		t.Errorf("all delivered: %+v; the outbox has no marker after the committed offsets, so this test shows nothing", p)
	}

	// The runner stops; 150 requests are written behind it.
	stopRunner()
	if err := <-ran; err != nil {
		t.Fatalf("runner: %v", err)
	}
	for i := range 3 { // in several transactions, as above
		env.Produce(in, 200+i*50, 50)
		end := env.EndOffsets(in)
		waitFor("the batch committed", func() bool {
			got := env.CommittedOffsets(app, in)
			for p, o := range end {
				if got[p] < o {
					return false
				}
			}
			return true
		})
	}
	if _, err := verify.WaitCaughtUp(ctx, env.Brokers, app, in, 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	waitFor("the last outbox transaction to be stable", func() bool { p := lag(); return p.Stable == p.End })
	if p := lag(); p.Lag != 150 || p.Estimated {
		t.Errorf("runner stopped: lag %+v, want 150", p)
	}
	if st := status(); st.Unread != 150 || st.Deliveries != 200 || st.States["pending"] != 0 {
		t.Errorf("runner stopped: status %+v, want 150 unread, 200 deliveries", st)
	}
	if d := delivered.Load(); d != 200 {
		t.Errorf("%d deliveries, want 200", d)
	}
}
