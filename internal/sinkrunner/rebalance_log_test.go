package sinkrunner_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// Ordinary rebalances of the runners' group (two runners starting
// together, a third joining, one leaving) and their stops are routine: no
// runner logs a warning or an error, and every request is delivered.
func TestRoutineRunnerRebalancesAreNoWarning(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("shop"), env.Name("orders")
	env.CreateTopic(in, 4)
	var delivered atomic.Int64
	tp := topology.New("shop")
	orders := topology.Source(tp, in, serde.String(), serde.String())
	topology.ToSink(orders, "hook", sinks.Func(func(context.Context, sinks.Delivery) error {
		delivered.Add(1)
		return nil
	}), serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	env.Start(env.Config(app, "e1"), g)
	logs := map[string]*syncBuffer{}
	start := func(instance string) *runner {
		buf := &syncBuffer{}
		logs[instance] = buf
		return startRunnerWith(t, env, app, instance, tp, func(c *sinkrunner.Config) {
			c.Logger = hclog.New(&hclog.LoggerOptions{Name: instance, Level: hclog.Info, Output: buf})
		}, nil)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for name, l := range logs {
				t.Logf("%s:\n%s", name, l)
			}
		}
	})
	waitDelivered := func(n int64) {
		t.Helper()
		enginetest.WaitFor(t, fmt.Sprintf("%d deliveries", n), 60*time.Second, func() bool { return delivered.Load() >= n })
	}
	r1, r2 := start("r1"), start("r2")
	env.Produce(in, 0, 200)
	waitDelivered(200)
	r3 := start("r3")
	env.Produce(in, 200, 200)
	waitDelivered(400)
	if err := r2.stop(); err != nil {
		t.Errorf("r2: %v", err)
	}
	env.Produce(in, 400, 200)
	waitDelivered(600)
	for _, r := range []*runner{r1, r3} {
		if err := r.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	for name, l := range logs {
		for line := range strings.Lines(l.String()) {
			if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
				t.Errorf("%s: %s", name, strings.TrimSpace(line))
			}
		}
	}
}
