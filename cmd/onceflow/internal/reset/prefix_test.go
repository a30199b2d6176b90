package reset_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/reset"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Two applications whose ids share a prefix ("<x>" and "<x>-v2", as a
// team names a second version): a reset of the first leaves the second's
// internal topics alone, its changelog and repartition topics included.
func TestResetLeavesAnApplicationWithALongerIDAlone(t *testing.T) {
	env := enginetest.New(t)
	in, app := env.Name("in"), env.Name("pay")
	env.CreateTopic(in, 1)
	env.Produce(in, 0, 20)
	run := func(id string) {
		t.Helper()
		tp := topology.New("count")
		byValue := topology.Map(topology.Source(tp, in, serde.String(), serde.String()), func(_, v string) (string, string, error) { return v, v, nil })
		counts := topology.Count(topology.Repartition(byValue, "byvalue", serde.String(), serde.String()), "counts", serde.String())
		topology.To(counts, id+"-out", serde.String(), serde.Int64())
		p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: id, InstanceID: "r1", CommitInterval: 20 * time.Millisecond}, tp)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		env.WaitCount(id+"-out", 20, 60*time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	run(app)
	run(app + "-v2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plan, err := reset.Run(ctx, reset.Config{Brokers: env.Brokers, AppID: app, To: "earliest", DryRun: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(plan.Delete, func(t string) bool { return strings.HasPrefix(t, app+"-v2-") }); i >= 0 {
		t.Errorf("a reset of %s would delete %s of application %s-v2: plan deletes %v", app, plan.Delete[i], app, plan.Delete)
	}
	if i := slices.IndexFunc(plan.Moves, func(m reset.Move) bool { return strings.HasPrefix(m.Topic, app+"-v2-") }); i >= 0 {
		t.Errorf("a reset of %s would move offsets on %s: %v", app, plan.Moves[i].Topic, plan.Moves)
	}
	if len(plan.Delete) != 2 {
		t.Errorf("plan deletes %v, want the 2 internal topics of %s", plan.Delete, app)
	}
}
