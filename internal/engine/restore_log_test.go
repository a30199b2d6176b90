package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/enginetest"
	"github.com/onceflow/onceflow/internal/verify"
)

// logBuffer captures a replica's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// warnings returns the lines at WARN or ERROR.
func (l *logBuffer) warnings() []string {
	var out []string
	for line := range strings.Lines(l.String()) {
		if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// capturedConfig is a replica configuration whose log is captured, at
// debug level, and whose restores report when they wait.
func capturedConfig(env *enginetest.Env, app, instance string, waits *atomic.Int32) (engine.Config, *logBuffer) {
	cfg := stateConfig(env, app, instance, "")
	buf := &logBuffer{}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: instance, Level: hclog.Debug, Output: buf})
	cfg.Hooks.RestoreWaiting = func(string, int32) { waits.Add(1) }
	return cfg, buf
}

// A restore cut short by the session ending (a stop, a rebalance) is
// routine, not a failure: nothing is logged as a warning. A transaction
// left open on the changelog holds each restore until the test ends it.
func TestRestoreCutShortIsNoWarning(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	g := compile(t, plainCountTopology(in, out))
	env.Produce(in, 0, 100)
	r0 := env.Start(stateConfig(env, app, "r0", ""), g)
	waitFor(t, "the input counted", 60*time.Second, func() bool { return r0.E.Stats().RecordsIn >= 100 })
	if err := r0.Stop(); err != nil {
		t.Fatal(err)
	}

	// An open transaction on both changelog partitions.
	changelog := app + "-counts-changelog"
	txn, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID(env.Name("holder")), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if err := txn.ProduceSync(ctx, &kgo.Record{Topic: changelog, Partition: p, Key: []byte("held"), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// Stopped (Ctrl-C) while its restore waits.
	var waits1 atomic.Int32
	cfg1, log1 := capturedConfig(env, app, "r1", &waits1)
	r1 := env.Start(cfg1, g)
	waitFor(t, "r1's restore to wait", 30*time.Second, func() bool { return waits1.Load() >= 1 })
	if err := r1.Stop(); err != nil {
		t.Errorf("r1 stopped with %v", err)
	}

	// A second replica joins while the first restores: that restore ends
	// with the session, and the new generation's owners restore.
	var waits2, waits3 atomic.Int32
	cfg2, log2 := capturedConfig(env, app, "r2", &waits2)
	cfg3, log3 := capturedConfig(env, app, "r3", &waits3)
	r2 := env.Start(cfg2, g)
	waitFor(t, "r2's restore to wait", 30*time.Second, func() bool { return waits2.Load() >= 1 })
	r3 := env.Start(cfg3, g)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("r2:\n%s\nr3:\n%s", log2, log3)
		}
	})
	waitFor(t, "a restore in the new generation", 30*time.Second, func() bool { return waits2.Load()+waits3.Load() >= 2 })
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	r2.WaitReady(t, 60*time.Second)
	r3.WaitReady(t, 60*time.Second)
	env.Produce(in, 100, 100)
	env.WaitCount(out, 200, 60*time.Second)
	for _, r := range []*enginetest.Replica{r2, r3} {
		if err := r.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	for name, l := range map[string]*logBuffer{"r1": log1, "r2": log2} {
		if !strings.Contains(l.String(), "restore stopped: the session ended") {
			t.Errorf("%s: no restore was cut short", name)
		}
	}
	for name, l := range map[string]*logBuffer{"r1": log1, "r2": log2, "r3": log3} {
		if w := l.warnings(); len(w) > 0 {
			t.Errorf("%s logged %d warnings in a stop and a rebalance during restore:\n%s", name, len(w), strings.Join(w, "\n"))
		}
	}
	checkCounts(t, env, in, out)
}

// An ordinary first rebalance (two replicas starting together, a third
// joining while they process, one leaving) and stops at any moment of a
// replica's life (joining, restoring, processing) are routine: no replica
// logs a warning or an error, and the counts are right.
func TestRoutineRebalancesAndStopsAreNoWarning(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	g := compile(t, plainCountTopology(in, out))
	env.Produce(in, 0, 4000)
	logs := map[string]*logBuffer{}
	start := func(instance string) *enginetest.Replica {
		var waits atomic.Int32
		cfg, buf := capturedConfig(env, app, instance, &waits)
		cfg.StateDir = t.TempDir() // nothing local: every session restores
		logs[instance] = buf
		return env.Start(cfg, g)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for name, l := range logs {
				t.Logf("%s:\n%s", name, l)
			}
		}
	})

	// Stopped before it connects (Ctrl-C at once).
	var waits atomic.Int32
	cfg, buf := capturedConfig(env, app, "s", &waits)
	logs["s"] = buf
	e, err := engine.New(cfg, g)
	if err != nil {
		t.Fatal(err)
	}
	ended, cancelEnded := context.WithCancel(context.Background())
	cancelEnded()
	if err := e.Run(ended); err != nil {
		t.Errorf("stopped before it connected: %v", err)
	}

	// Stopped at moments spread over a start: while joining, restoring,
	// processing.
	for i, d := range []time.Duration{0, 20, 50, 100, 200, 400, 800, 1500} {
		r := start(fmt.Sprintf("s%d", i))
		time.Sleep(d * time.Millisecond)
		if err := r.Stop(); err != nil {
			t.Errorf("s%d stopped after %v with %v", i, d*time.Millisecond, err)
		}
	}

	// Two replicas start together; a third joins; the second leaves.
	r1, r2 := start("r1"), start("r2")
	r1.WaitReady(t, 60*time.Second)
	r2.WaitReady(t, 60*time.Second)
	env.Produce(in, 4000, 2000)
	r3 := start("r3")
	r3.WaitReady(t, 60*time.Second)
	env.Produce(in, 6000, 2000)
	if err := r2.Stop(); err != nil {
		t.Errorf("r2: %v", err)
	}
	env.Produce(in, 8000, 2000)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if _, err := verify.WaitCaughtUp(ctx, env.Brokers, app, in, 50*time.Millisecond, nil); err != nil {
		t.Fatalf("the input not consumed: %v", err)
	}
	for _, r := range []*enginetest.Replica{r1, r3} {
		if err := r.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(logs)) {
		if w := logs[name].warnings(); len(w) > 0 {
			t.Errorf("%s logged %d warnings or errors in routine rebalances and stops:\n%s", name, len(w), strings.Join(w, "\n"))
		}
	}
	checkCounts(t, env, in, out)
}
