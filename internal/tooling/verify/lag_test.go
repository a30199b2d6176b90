package verify_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// A group coordinator that is not available yet (a fresh cluster creating
// its offsets topic, a coordinator moving) is waited out by WaitCaughtUp,
// not reported as an error: lag --wait right after a replica starts.
func TestWaitCaughtUpWaitsOutCoordinatorNotAvailable(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte("a")}, &kgo.Record{Topic: "in", Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "in", Partition: 0, At: 2, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}

	c := b.Cluster()
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.FindCoordinator), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if refused.Load() >= 40 {
			return nil, nil, false
		}
		refused.Add(1)
		r := req.(*kmsg.FindCoordinatorRequest)
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, k := range r.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key = k
			rc.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp, nil, true
	})
	p, err := verify.WaitCaughtUp(ctx, b.Addrs(), "g", "in", 10*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("WaitCaughtUp: %v (after %d refusals)", err, refused.Load())
	}
	if p.Committed != 2 || p.End != 2 || refused.Load() < 40 {
		t.Fatalf("progress %+v after %d refusals, want 2 of 2 after 40", p, refused.Load())
	}
}

// A wait that ends while a request is out answers with the last reading (a
// group that does not exist stays "no group"), not with the request's
// deadline error: lag --wait for a missing group on a slow broker.
func TestWaitCaughtUpEndingMidRequestKeepsTheLastReading(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The first reading (three ListOffsets: start, stable and end) goes
	// through; every ListOffsets after it is held until the test ends.
	c := b.Cluster()
	release := make(chan struct{})
	defer close(release)
	var seen atomic.Int32
	c.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if seen.Add(1) > 3 {
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	p, err := verify.WaitCaughtUp(wctx, b.Addrs(), "nope", "in", 10*time.Millisecond, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !p.NoGroup || seen.Load() < 4 {
		t.Fatalf("progress %+v, error %v after %d ListOffsets: want no group and the wait's deadline", p, err, seen.Load())
	}
}
