package sinkrunner_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// receiver is a downstream that keeps idempotency keys: it applies an
// effect once per key, and misbehaves on purpose.
type receiver struct {
	idempotent bool
	mu         sync.Mutex
	effects    map[string]int // effects applied per key (more than 1: a duplicate)
	calls      map[string]int
	started    chan struct{}
	once       sync.Once
}

func newReceiver(idempotent bool) *receiver {
	return &receiver{idempotent: idempotent, effects: map[string]int{}, calls: map[string]int{}, started: make(chan struct{})}
}

func (r *receiver) Idempotent() bool { return r.idempotent }

// roll is a stable number in [0, 100) for a key and an attempt.
func roll(key string, attempt int) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", key, attempt)
	return int(h.Sum32() % 100)
}

func (r *receiver) Deliver(ctx context.Context, d sinks.Delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[d.IdempotencyKey]++
	r.once.Do(func() { close(r.started) })
	payload := string(d.Payload)
	switch {
	case strings.HasPrefix(payload, "bad"):
		return sinks.PermanentError(errors.New("400 bad request"))
	case strings.HasPrefix(payload, "lost") && !r.idempotent:
		r.apply(d.IdempotencyKey)
		return sinks.UnknownError(errors.New("connection reset after the request was sent"))
	}
	n := roll(d.IdempotencyKey, d.Attempt)
	switch {
	case n < 20:
		return sinks.TransientError(errors.New("503 unavailable"), 0)
	case n < 30:
		r.apply(d.IdempotencyKey)
		return sinks.UnknownError(errors.New("response lost"))
	}
	r.apply(d.IdempotencyKey)
	return nil
}

// apply applies the effect, once per key when the receiver keeps keys.
func (r *receiver) apply(key string) {
	if r.idempotent && r.effects[key] > 0 {
		return
	}
	r.effects[key]++
}

func (r *receiver) snapshot() (effects map[string]int, calls map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	effects, calls = map[string]int{}, map[string]int{}
	for k, v := range r.effects {
		effects[k] = v
	}
	for k, v := range r.calls {
		calls[k] = v
	}
	return effects, calls
}

type runner struct {
	r      *sinkrunner.Runner
	cancel context.CancelFunc
	done   chan error
}

func startRunner(t *testing.T, env *enginetest.Env, app, instance string, tp *topology.Topology) *runner {
	t.Helper()
	return startRunnerWith(t, env, app, instance, tp, nil, nil)
}

// startRunnerWith starts a runner whose config tune changes, after setup
// (nil: none).
func startRunnerWith(t *testing.T, env *enginetest.Env, app, instance string, tp *topology.Topology, tune func(*sinkrunner.Config), setup func(*sinkrunner.Runner)) *runner {
	t.Helper()
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := env.Config(app, instance)
	cfg := sinkrunner.Config{
		Client: ecfg.Client, Timeouts: ecfg.Timeouts, AppID: app, InstanceID: instance,
		Sinks:  sinks.RunnerConfig{BackoffBase: time.Millisecond, BackoffCap: 10 * time.Millisecond, CommitInterval: 50 * time.Millisecond, AttemptTimeout: 5 * time.Second},
		Logger: hclog.New(&hclog.LoggerOptions{Name: instance, Level: hclog.Warn}),
	}
	if tune != nil {
		tune(&cfg)
	}
	r, err := sinkrunner.New(cfg, g.WithPrefix(app))
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rn := &runner{r: r, cancel: cancel, done: make(chan error, 1)}
	go func() { rn.done <- r.Run(ctx) }()
	t.Cleanup(func() { rn.stop() })
	return rn
}

func (rn *runner) stop() error {
	rn.cancel()
	select {
	case err := <-rn.done:
		rn.done <- err
		return err
	case <-time.After(60 * time.Second):
		return errors.New("runner did not stop")
	}
}

// End to end on the embedded broker: orders go through a topology with two
// external sinks; the idempotent one fails 20 % of attempts transiently
// and applies 10 % without answering; the runner is killed while
// deliveries are out and another takes over. Every accepted order has
// exactly one effect, the permanent failures are in the dead-letter topic,
// and the unknown outcomes of the sink that is not idempotent are parked,
// sent once.
func TestEndToEndKilledRunner(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	in := env.Name("orders")
	env.CreateTopic(in, 3)
	hook, legacy := newReceiver(true), newReceiver(false)
	tp := topology.New("shop")
	orders := topology.Source(tp, in, serde.String(), serde.String())
	topology.ToSink(orders, "hook", hook, serde.String(), nil)
	topology.ToSink(orders, "legacy", legacy, serde.String(), nil)

	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	const good, bad, lost = 300, 5, 4
	var rs []*kgo.Record
	for i := range good + bad + lost {
		v := fmt.Sprintf("order-%d", i)
		switch {
		case i >= good+bad:
			v = fmt.Sprintf("lost-%d", i)
		case i >= good:
			v = fmt.Sprintf("bad-%d", i)
		}
		rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "customer-%d", i%40), Value: []byte(v)})
	}
	env.ProduceRecords(rs...)

	first := startRunner(t, env, app, "r1", tp)
	<-hook.started
	time.Sleep(50 * time.Millisecond) // let deliveries be out when it dies
	first.r.Crash()
	first.stop()
	startRunner(t, env, app, "r2", tp)

	total := good + bad + lost
	waitFor(t, fmt.Sprintf("%d keys with effects and %d dead letters", good+lost, bad), 90*time.Second, func() bool {
		effects, _ := hook.snapshot()
		return len(effects) >= good+lost && len(env.Read(app+"-sink-hook-dlq")) >= bad
	})
	time.Sleep(time.Second) // the window in which an effect more would show: anything more would be a defect
	if err := replica.Stop(); err != nil {
		t.Fatal(err)
	}
	outbox := env.Read(app + "-sink-hook")
	if len(outbox) != total {
		t.Fatalf("outbox has %d requests, want %d", len(outbox), total)
	}
	effects, calls := hook.snapshot()
	for _, r := range outbox {
		key := r.Headers["onceflow-idempotency-key"]
		want := 1
		if strings.HasPrefix(string(r.Value), "bad") {
			want = 0
		}
		if effects[key] != want {
			// more than 1: a duplicate effect; 0: a lost one
			t.Errorf("%s (%s): %d effects, want %d", key, r.Value, effects[key], want)
		}
	}
	var attempts int
	for _, n := range calls {
		attempts += n
	}
	dlq := env.Read(app + "-sink-hook-dlq")
	if len(dlq) != bad {
		t.Errorf("%d dead letters, want %d", len(dlq), bad)
	}
	for _, r := range dlq {
		if !strings.HasPrefix(string(r.Value), "bad") || r.Headers[wire.HeaderSinkClass] != "permanent" || r.Headers[wire.HeaderSinkAttempts] != "1" {
			t.Errorf("dead letter %s with headers %v", r.Value, r.Headers)
		}
	}
	t.Logf("hook: %d requests, %d attempts, %d keys with an effect", total, attempts, len(effects))

	// The sink that is not idempotent: each lost-* delivery was sent once
	// and parked.
	waitFor(t, fmt.Sprintf("%d keys sent to the sink that is not idempotent", total-bad), 30*time.Second, func() bool {
		_, lcalls := legacy.snapshot()
		return len(lcalls) >= total-bad
	})
	time.Sleep(500 * time.Millisecond) // the window in which a second call would come
	_, lcalls := legacy.snapshot()
	for _, r := range env.Read(app + "-sink-legacy") {
		key := r.Headers["onceflow-idempotency-key"]
		if strings.HasPrefix(string(r.Value), "lost") && lcalls[key] != 1 {
			t.Errorf("%s (%s) sent %d times to a sink that is not idempotent after an unknown outcome, want 1", key, r.Value, lcalls[key])
		}
	}
}
