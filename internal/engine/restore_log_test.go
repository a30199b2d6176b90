package engine_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
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
