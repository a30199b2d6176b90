package sinkrunner_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
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

// syncBuffer is a log output safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A stop is clean at any moment of a runner's start: before it connects,
// and while it waits for an outbox the engine has not created yet (a
// Ctrl-C there used to hold the process for a minute, then fail).
func TestStopDuringStartIsClean(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	tp := topology.New("shop")
	orders := topology.Source(tp, env.Name("orders"), serde.String(), serde.String())
	topology.ToSink(orders, "hook", sinks.Func(func(context.Context, sinks.Delivery) error { return nil }), serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	newRunner := func(log *syncBuffer) *sinkrunner.Runner {
		ecfg := env.Config(app, "r1")
		r, err := sinkrunner.New(sinkrunner.Config{Client: ecfg.Client, Timeouts: ecfg.Timeouts, AppID: app, InstanceID: "r1",
			Logger: hclog.New(&hclog.LoggerOptions{Name: "r1", Level: hclog.Info, Output: log})}, g.WithPrefix(app))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var log syncBuffer
	if err := newRunner(&log).Run(ended); err != nil {
		t.Errorf("stopped before it connected: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- newRunner(&log).Run(ctx) }()
	defer func() {
		if t.Failed() {
			t.Logf("the runner's log:\n%s", log.String())
		}
	}()
	waitFor(t, "the runner waiting for its outbox", 30*time.Second, func() bool {
		return strings.Contains(log.String(), "waiting for the outbox topic")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stopped while waiting for the outbox: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("still waiting for the outbox 5s after the stop")
	}
	if strings.Contains(log.String(), "[WARN]") || strings.Contains(log.String(), "[ERROR]") {
		t.Errorf("warnings in a stop:\n%s", log.String())
	}
}
