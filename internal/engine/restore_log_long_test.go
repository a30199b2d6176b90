//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package engine_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

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
		time.Sleep(d * time.Millisecond) // the moment of the stop is what varies
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
