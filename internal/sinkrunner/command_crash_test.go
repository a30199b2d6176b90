package sinkrunner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// scripted is a sink whose answers the test sets per payload: each
// attempt takes the next step of its payload's script ("ok" once the
// script is spent). A "hang" step blocks the attempt until released, then
// applies it. It counts attempts and applied effects per payload.
type scripted struct {
	idempotent bool
	mu         sync.Mutex
	script     map[string][]string
	calls      map[string]int
	effects    map[string]int
	hung       chan string   // the payload of each attempt that hangs
	release    chan struct{} // closed to let hanging attempts return
}

func newScripted(idempotent bool) *scripted {
	return &scripted{idempotent: idempotent, script: map[string][]string{}, calls: map[string]int{}, effects: map[string]int{},
		hung: make(chan string, 16), release: make(chan struct{})}
}

func (s *scripted) Idempotent() bool { return s.idempotent }

func (s *scripted) then(payload string, steps ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script[payload] = append(s.script[payload], steps...)
}

func (s *scripted) Deliver(_ context.Context, d sinks.Delivery) error {
	p := string(d.Payload)
	s.mu.Lock()
	s.calls[p]++
	step := "ok"
	if q := s.script[p]; len(q) > 0 {
		step, s.script[p] = q[0], q[1:]
	}
	s.mu.Unlock()
	switch step {
	case "permanent":
		return sinks.PermanentError(errors.New("400 bad request"))
	case "unknown":
		return sinks.UnknownError(errors.New("no answer"))
	case "transient":
		return sinks.TransientError(errors.New("503 unavailable"), 10*time.Minute)
	case "hang":
		s.hung <- p
		<-s.release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.idempotent || s.effects[p] == 0 {
		s.effects[p]++
	}
	return nil
}

func (s *scripted) counts(payload string) (calls, effects int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[payload], s.effects[payload]
}

// A redrive and a resolve as retry, written in batches, survive a crash
// of the runner that applied them, between the command and the delivery's settlement: a
// delivery waiting for a retry is delivered once after the restart; one
// whose attempt was out when the runner died is parked as unknown for a
// sink that is not idempotent (and listed, and resolvable), and delivered
// again under its key for one that is.
func TestCommandSurvivesCrash(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	in := env.Name("orders")
	env.CreateTopic(in, 1)
	hook, legacy := newScripted(true), newScripted(false)
	legacy.then("lost-retry", "unknown", "transient") // parked; resolved as retry; waits for a retry when the runner dies
	legacy.then("bad-hang", "permanent", "hang")      // dead-lettered; redriven; the attempt is out when the runner dies
	hook.then("bad-hook", "permanent", "hang")        // the same, to a sink that keeps keys
	legacy.then("lost-hang", "unknown", "hang")       // parked; resolved as retry; the attempt is out when the runner dies
	tp := topology.New("shop")
	orders := topology.Source(tp, in, serde.String(), serde.String())
	topology.ToSink(orders, "hook", hook, serde.String(), nil)
	topology.ToSink(orders, "legacy", legacy, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()
	payloads := []string{"lost-retry", "bad-hang", "bad-hook", "lost-hang"}
	var rs []*kgo.Record
	for i, v := range payloads {
		rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "customer-%d", i), Value: []byte(v)})
	}
	env.ProduceRecords(rs...)
	first := startRunner(t, env, app, "r1", tp)
	env.WaitCount(app+"-sink-legacy", len(rs), 30*time.Second)
	env.WaitCount(app+"-sink-hook", len(rs), 30*time.Second)
	keys := map[string]map[string]string{}
	for _, sink := range []string{"hook", "legacy"} {
		keys[sink] = map[string]string{}
		for _, r := range env.Read(app + "-sink-" + sink) {
			keys[sink][string(r.Value)] = r.Headers[sinks.HeaderIdempotencyKey]
		}
	}
	state := func(sink, payload string) sinkrunner.State {
		return ledgerState(t, env, app, sink, keys[sink][payload])
	}
	until(t, "lost-retry and lost-hang parked, bad-hang and bad-hook dead-lettered", func() bool {
		return state("legacy", "lost-retry") == sinkrunner.Unknown && state("legacy", "lost-hang") == sinkrunner.Unknown &&
			state("legacy", "bad-hang") == sinkrunner.DeadLettered && state("hook", "bad-hook") == sinkrunner.DeadLettered
	})

	// The commands go in batches, as `sinks unknown resolve` and `dlq
	// redrive` write them: both parked deliveries in one, every dead
	// letter of each sink in one.
	ctx := context.Background()
	cmds, err := sinkadmin.ResolveKeys(ctx, env.Brokers, app, "legacy", []string{keys["legacy"]["lost-retry"], keys["legacy"]["lost-hang"]}, wire.SinkResolveRetry)
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"legacy", "hook"} {
		rd, err := sinkadmin.RedriveAll(ctx, env.Brokers, app, sink, nil)
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, rd...)
	}
	if len(cmds) != 4 {
		t.Fatalf("%d commands written, want 4: %+v", len(cmds), cmds)
	}
	// The commands applied and their deliveries unsettled: one waiting
	// for its retry, three attempts out.
	hung := map[string]bool{}
	for len(hung) < 3 {
		select {
		case p := <-legacy.hung:
			hung[p] = true
		case p := <-hook.hung:
			hung[p] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("attempts out: %v", hung)
		}
	}
	until(t, "lost-retry waiting for its retry", func() bool {
		calls, _ := legacy.counts("lost-retry")
		return calls == 2 && state("legacy", "lost-retry") == sinkrunner.Pending
	})

	// The runner dies: nothing it does after this reaches the ledger or
	// the group. The attempts out return (applied) as the process ends.
	first.r.Crash()
	close(legacy.release)
	close(hook.release)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	startRunner(t, env, app, "r1", tp)
	until(t, "the commands settled and committed", func() bool {
		for _, c := range cmds {
			if env.CommittedOffsets(app+"-sinks", c.Outbox)[c.Partition] <= c.Offset {
				return false
			}
		}
		return true
	})

	for _, c := range []struct {
		sink, payload  string
		state          sinkrunner.State
		calls, effects int
	}{
		{"legacy", "lost-retry", sinkrunner.Succeeded, 3, 1}, // unknown, transient, then delivered once after the restart
		{"legacy", "bad-hang", sinkrunner.Unknown, 2, 1},     // the attempt out applied; parked, not sent again
		{"legacy", "lost-hang", sinkrunner.Unknown, 2, 1},    // the same
		{"hook", "bad-hook", sinkrunner.Succeeded, 3, 1},     // sent again under its key, applied once
	} {
		b := legacy
		if c.sink == "hook" {
			b = hook
		}
		calls, effects := b.counts(c.payload)
		if got := state(c.sink, c.payload); got != c.state || calls != c.calls || effects != c.effects {
			t.Errorf("%s %s: %s, %d calls, %d effects; want %s, %d and %d", c.sink, c.payload, got, calls, effects, c.state, c.calls, c.effects)
		}
	}
	// The parked ones are listed and can be resolved again.
	unk, err := sinkadmin.Unknown(ctx, env.Brokers, app, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if len(unk) != 2 {
		t.Errorf("%d deliveries parked as unknown, want 2: %v", len(unk), unk)
	}
	if _, err := sinkadmin.Resolve(ctx, env.Brokers, app, "legacy", keys["legacy"]["bad-hang"], wire.SinkResolveSucceeded); err != nil {
		t.Fatalf("resolve after the restart: %v", err)
	}
	until(t, "bad-hang resolved as succeeded", func() bool { return state("legacy", "bad-hang") == sinkrunner.Succeeded })
}
