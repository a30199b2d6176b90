//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package engine_test

import (
	"fmt"
	"testing"
	"time"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// Replicas join and leave while records flow: every input has exactly one
// output.
func TestRebalanceAcrossThreeReplicasUnderLoad(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 6)
	g := compile(t, copyex.Topology(in, out))
	load := startLoad(env, in, 0, 200)

	r1 := env.Start(env.Config(app, "r1"), g)
	waitFor(t, "r1 to process", 30*time.Second, func() bool { return r1.E.Stats().RecordsIn > 1000 })
	r2 := env.Start(env.Config(app, "r2"), g)
	waitFor(t, "r2 to process", 30*time.Second, func() bool { return r2.E.Stats().RecordsIn > 500 })
	r3 := env.Start(env.Config(app, "r3"), g)
	waitFor(t, "r3 to process", 30*time.Second, func() bool { return r3.E.Stats().RecordsIn > 500 })
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	before := r3.E.Stats().Sessions
	waitFor(t, "the group to settle without r2", 30*time.Second, func() bool { return r3.E.Stats().Sessions > before && r3.E.Ready() })
	r2 = env.Start(env.Config(app, "r2"), g)
	waitFor(t, "r2 to come back", 30*time.Second, func() bool { return r2.E.Stats().RecordsIn > 300 })

	n := load.finish()
	env.WaitCount(out, n, 90*time.Second)
	for _, r := range []*enginetest.Replica{r1, r2, r3} {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	}
	rep := env.Verify(in, out)
	if rep.Input != n {
		t.Errorf("input %d, want %d", rep.Input, n)
	}
	for i, r := range []*enginetest.Replica{r1, r2, r3} {
		t.Logf("r%d: %+v", i+1, r.E.Stats())
	}
}

// A replica is killed with transactions open, then restarted with the same
// instance id: its open transaction is aborted when the new producer
// initialises, and the output is exactly once.
func TestReplicaKilledMidTransaction(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 6)
	g := compile(t, copyex.Topology(in, out))
	load := startLoad(env, in, 0, 200)
	r1 := env.Start(env.Config(app, "r1"), g)
	r2 := env.Start(env.Config(app, "r2"), g)
	for round := range 3 {
		victim := r1
		waitFor(t, fmt.Sprintf("round %d: traffic", round), 30*time.Second, func() bool {
			return victim.E.Stats().RecordsIn > 500 && r2.E.Stats().RecordsIn > 0
		})
		victim.Crash()
		r1 = env.Start(env.Config(app, "r1"), g)
	}
	waitFor(t, "the restarted replica to process", 30*time.Second, func() bool { return r1.E.Stats().RecordsIn > 200 })
	n := load.finish()
	env.WaitCount(out, n, 90*time.Second)
	r1.Stop()
	r2.Stop()
	rep := env.Verify(in, out)
	if rep.Input != n {
		t.Errorf("input %d, want %d", rep.Input, n)
	}
}
