package verify_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// Input the application has not consumed yet (its group's committed
// offsets are below it: a replica stopped with lag, or one still running)
// has no outcome yet, rightly: it is counted apart as pending, and the
// check of what was consumed passes.
func TestOutcomesInputNotYetConsumedIsPending(t *testing.T) {
	e := enginetest.New(t)
	in, out, app := e.Name("in"), e.Name("out"), e.Name("app")
	e.CreateTopic(in, 2)
	e.CreateTopic(out, 2)
	e.Produce(in, 0, 50)
	g, err := graph.Compile(balances(in, out))
	if err != nil {
		t.Fatal(err)
	}
	g = g.WithPrefix(app)
	r := e.Start(e.Config(app, "r1"), g)
	e.WaitCount(out, 50, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	e.Produce(in, 50, 10) // after the replica stopped: not consumed
	spec := verify.SpecOf(g, app+"-rejected")
	spec.Group = app
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := verify.Outcomes(ctx, e.Brokers, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep)
	if !rep.OK || rep.Input != 60 || rep.WithOutput != 50 || rep.Pending != 10 || rep.Missing != 0 {
		t.Fatalf("10 inputs not consumed yet: %+v", rep)
	}
}
