package processor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

func copyTopic(in, out string) *topology.Topology {
	t := topology.New("copy")
	topology.To(topology.Source(t, in, serde.Bytes(), serde.Bytes()), out, serde.Bytes(), serde.Bytes())
	return t
}

func TestRunFailsClearlyWhenBrokersAreUnreachable(t *testing.T) {
	p, err := processor.New(processor.Config{Brokers: []string{"127.0.0.1:1"}, ApplicationID: "app", InstanceID: "r1"}, copyTopic("in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	err = p.Run(ctx)
	if !errors.Is(err, processor.ErrUnreachable) {
		t.Fatalf("Run: %v, want ErrUnreachable", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Run waited for the test's deadline (%v) instead of failing on its own", time.Since(start))
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error does not name the brokers: %v", err)
	}
}

func TestRunFailsClearlyOnMissingAndUnpartneredTopics(t *testing.T) {
	env := enginetest.New(t)
	a, b := env.Name("a"), env.Name("b")
	env.CreateTopic(a, 3)
	env.CreateTopic(b, 4)
	tp := topology.New("join")
	sa := topology.Source(tp, a, serde.String(), serde.String())
	sb := topology.Source(tp, b, serde.String(), serde.String())
	topology.To(topology.Merge(sa, sb), env.Name("out"), serde.String(), serde.String())
	missing := topology.Source(tp, env.Name("nope"), serde.String(), serde.String())
	topology.To(missing, env.Name("out2"), serde.String(), serde.String())

	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: env.Name("app"), InstanceID: "r1"}, tp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = p.Run(ctx)
	if !errors.Is(err, processor.ErrTopicMissing) {
		t.Errorf("Run: %v, want ErrTopicMissing", err)
	}
	for _, want := range []string{env.Name("nope"), "not co-partitioned", a + " has 3 partitions", b + " has 4 partitions"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Cancelled while it cannot create its producer (the coordinator keeps
// answering that it is not available, which is retried), Run still stops
// cleanly: nil, as promised. (A refusal, such as a missing
// transactional-id ACL, stops the replica with an error instead.)
func TestRunReturnsNilWhenCancelledCreatingProducer(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("injects InitProducerID errors with the embedded broker's faults")
	}
	in := env.Name("in")
	env.CreateTopic(in, 1)
	h := env.Broker.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorNotAvailable, Count: -1})
	defer h.Remove()
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: env.Name("app"), InstanceID: "r1"}, copyTopic(in, env.Name("out")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := h.Wait(wctx, 2); err != nil {
		t.Fatalf("the producer was not refused twice: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v; want nil after a cancel", err)
		}
	case <-time.After(p.StopBound()):
		t.Fatalf("Run did not return within %v of the cancel", p.StopBound())
	}
}

// A coordinator that refuses the transactional id (the principal lacks
// the TransactionalId ACL) stops Run at once with an error naming the ACL,
// instead of retrying the producer's creation until cancelled.
func TestRunStopsWhenTheTransactionalIDIsRefused(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("injects InitProducerID errors with the embedded broker's faults")
	}
	in := env.Name("in")
	env.CreateTopic(in, 1)
	h := env.Broker.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.TransactionalIDAuthorizationFailed, Count: -1})
	defer h.Remove()
	app := env.Name("app")
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r1"}, copyTopic(in, env.Name("out")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = p.Run(ctx)
	if err == nil || ctx.Err() != nil || time.Since(start) > 15*time.Second {
		t.Fatalf("Run: %v after %v (context: %v), want a refusal within 15s", err, time.Since(start), ctx.Err())
	}
	for _, want := range []string{"refused by the cluster", fmt.Sprintf("WRITE on TransactionalId %q", app+"-r1")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
