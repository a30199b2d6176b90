package sinkrunner_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// A runner whose dead-letter topic was left by an earlier release with the
// broker's 7 days (or a size) switches it to no retention at start: a dead
// letter exists nowhere else once the outbox is purged.
func TestRunnerKeepsDeadLettersForever(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	outbox, dlq := app+"-sink-hook", app+"-sink-hook-dlq"
	env.CreateTopic(outbox, 2)
	env.CreateTopic(dlq, 2)
	env.SetTopicConfig(dlq, "retention.ms", "604800000")
	env.SetTopicConfig(dlq, "retention.bytes", "1073741824")
	tp := topology.New("shop")
	orders := topology.Source(tp, env.Name("orders"), serde.String(), serde.String())
	topology.ToSink(orders, "hook", sinks.Func(func(context.Context, sinks.Delivery) error { return nil }), serde.String(), nil)
	rn := startRunner(t, env, app, "r1", tp)
	enginetest.WaitFor(t, "the runner in a session", 60*time.Second, rn.r.Ready)
	for _, name := range []string{"retention.ms", "retention.bytes"} {
		if v := env.TopicConfig(dlq, name); v != "-1" {
			t.Errorf("%s: %s=%s, want -1", dlq, name, v)
		}
	}
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
}
