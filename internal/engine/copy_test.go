package engine_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

func compile(t *testing.T, tp *topology.Topology) *graph.Graph {
	t.Helper()
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestCopyExactlyOnce(t *testing.T) {
	env := enginetest.New(t)
	in, out := env.Name("in"), env.Name("out")
	env.CreateTopic(in, 4)
	env.Produce(in, 0, 3000)
	r := env.Start(env.Config(env.Name("app"), "r1"), compile(t, copyex.Topology(in, out)))
	env.WaitCount(out, 3000, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	rep := env.Verify(in, out)
	if rep.Input != 3000 || rep.Output != 3000 {
		t.Errorf("counts: %s", rep)
	}
	if s := r.E.Stats(); s.Committed == 0 || s.RecordsIn != 3000 {
		t.Errorf("stats: %+v", s)
	}
}

// Everything filtered: each transaction holds offsets only, and they still
// commit.
func TestOffsetsOnlyTransactionCommits(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 3)
	env.Produce(in, 0, 600)
	tp := topology.New("drop-all")
	src := topology.Source(tp, in, serde.String(), serde.String())
	topology.To(topology.Filter(src, func(string, string) bool { return false }), out, serde.String(), serde.String())
	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	end := env.EndOffsets(in)
	waitFor(t, "the offsets committed to the end "+fmt.Sprint(end), 60*time.Second, func() bool {
		return maps.Equal(env.CommittedOffsets(app, in), end)
	})
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(env.Read(out)); n != 0 {
		t.Errorf("output has %d records, want none", n)
	}
	if s := r.E.Stats(); s.Committed == 0 || s.RecordsOut != 0 || s.RecordsIn != 600 {
		t.Errorf("stats: %+v", s)
	}
}

// At-least-once: offsets commit after the outputs are acknowledged. Without
// failures nothing is missing and nothing repeats; the group's committed
// offsets reach the end.
func TestCopyAtLeastOnce(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	env.Produce(in, 0, 3000)
	cfg := env.Config(app, "r1")
	cfg.ExactlyOnce = false
	r := env.Start(cfg, compile(t, copyex.Topology(in, out)))
	env.WaitCount(out, 3000, 60*time.Second)
	end := env.EndOffsets(in)
	waitFor(t, "offsets committed through the end", 30*time.Second, func() bool {
		got := env.CommittedOffsets(app, in)
		for p, o := range end {
			if got[p] != o {
				return false
			}
		}
		return true
	})
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	env.Verify(in, out)
}

// A graceful stop leaves the group at once: a static member that only
// closed would keep its partitions until its session timed out.
func TestGracefulStopLeavesTheGroup(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	env.Produce(in, 0, 100)
	g := compile(t, copyex.Topology(in, out))
	r1 := env.Start(env.Config(app, "r1"), g)
	r2 := env.Start(env.Config(app, "r2"), g)
	waitFor(t, "both members in the group", 60*time.Second, func() bool { return len(env.Members(app)) == 2 && r1.E.Ready() && r2.E.Ready() })
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	if m := env.Members(app); slices.Contains(m, "r2") {
		t.Errorf("r2 is still a member after its graceful stop: %v", m)
	}
	r1.Stop()
}
