package processor_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// With OnlySinks, Ready and Health describe the sink runner (the engine
// does not run): ready once it holds its outbox partitions with their
// ledgers restored; unhealthy while an attempt hangs past the stall bound
// with deliveries held; healthy again once deliveries settle.
func TestOnlySinksReadyAndHealthDescribeTheRunner(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("app"), env.Name("in")
	outbox := app + "-sink-hook"
	env.CreateTopic(in, 1)
	env.CreateTopic(outbox, 1)
	var hang atomic.Bool
	release := make(chan struct{})
	var delivered atomic.Int64
	hook := sinks.Func(func(ctx context.Context, d sinks.Delivery) error {
		if hang.Load() {
			<-release // ignores ctx: an attempt that never ends
		}
		delivered.Add(1)
		return nil
	})
	tp := topology.New("app")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.String(), nil)
	const stall = time.Second
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r1", OnlySinks: true,
		StallTimeout: stall, StateDir: t.TempDir(),
		Sinks: sinks.RunnerConfig{AttemptTimeout: 500 * time.Millisecond, BackoffBase: time.Millisecond, BackoffCap: 10 * time.Millisecond, CommitInterval: 50 * time.Millisecond}}, tp)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ready() {
		t.Error("ready before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer func() {
		free()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	enginetest.WaitFor(t, "ready", 30*time.Second, p.Ready)
	if err := p.Health(); err != nil {
		t.Errorf("Health while delivering: %v", err)
	}
	produce := func(n int) {
		var rs []*kgo.Record
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: outbox, Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")})
		}
		env.ProduceRecords(rs...)
	}
	produce(10)
	enginetest.WaitFor(t, "10 deliveries", 30*time.Second, func() bool { return delivered.Load() == 10 })
	time.Sleep(2 * stall) // idle, nothing held: no stall
	if err := p.Health(); err != nil {
		t.Errorf("Health while idle: %v", err)
	}

	hang.Store(true)
	produce(5)
	enginetest.WaitFor(t, "a stall reported", 30*time.Second, func() bool { return p.Health() != nil })
	t.Logf("Health: %v", p.Health())
	if !p.Ready() {
		t.Error("not ready while in a session")
	}
	if err := p.Health(); !strings.Contains(fmt.Sprint(err), "stalled") {
		t.Errorf("Health: %v, want a stall", err)
	}
	hang.Store(false)
	free()
	enginetest.WaitFor(t, "15 deliveries", 30*time.Second, func() bool { return delivered.Load() == 15 })
	// The hook counts a delivery before the runner settles it, so the
	// stall is reported until the settle lands: health must come back
	// within a bound, not at the instant of the count.
	enginetest.WaitFor(t, "healthy once deliveries settled", 30*time.Second, func() bool { return p.Health() == nil })
	if delivered.Load() != 15 {
		t.Errorf("deliveries: %d, want 15 (each once)", delivered.Load())
	}
}
