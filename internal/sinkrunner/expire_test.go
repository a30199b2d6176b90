package sinkrunner_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// The ledger does not grow forever: a succeeded delivery's entry is
// deleted from the ledger and its changelog once it has been settled for
// the retention; a dead-lettered one (waiting for an operator) and a
// recent one stay.
func TestLedgerEntriesExpire(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	in := env.Name("orders")
	env.CreateTopic(in, 1)
	hook := newScripted(true)
	hook.then("bad-2", "permanent")
	tp := topology.New("shop")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()
	var skew atomic.Int64 // how far the runner's clock is ahead
	startRunnerWith(t, env, app, "r1", tp, func(c *sinkrunner.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		c.Sinks.LedgerRetention = time.Hour
		c.ExpireInterval = 20 * time.Millisecond
		c.PurgeInterval = 1000 * time.Hour // the outbox is read back here
	}, nil)
	outbox := app + "-sink-hook"
	produce := func(vs ...string) {
		for _, v := range vs {
			env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte(v), Value: []byte(v)})
		}
	}
	keys := func() map[string]string {
		ks := map[string]string{}
		for _, r := range env.Read(outbox) {
			ks[string(r.Value)] = r.Headers[sinks.HeaderIdempotencyKey]
		}
		return ks
	}
	produce("ok-0", "ok-1", "bad-2")
	env.WaitCount(outbox, 3, 30*time.Second)
	ks := keys()
	state := func(v string) sinkrunner.State { return ledgerState(t, env, app, "hook", ks[v]) }
	until(t, "the first three settled", func() bool {
		return state("ok-0") == sinkrunner.Succeeded && state("ok-1") == sinkrunner.Succeeded && state("bad-2") == sinkrunner.DeadLettered
	})

	skew.Store(int64(2 * time.Hour))
	produce("ok-3")
	env.WaitCount(outbox, 4, 30*time.Second)
	ks = keys()
	until(t, "ok-3 settled, ok-0 and ok-1 expired", func() bool {
		return state("ok-3") == sinkrunner.Succeeded && state("ok-0") == "" && state("ok-1") == ""
	})
	if s := state("bad-2"); s != sinkrunner.DeadLettered {
		t.Errorf("bad-2 is %q, want it kept %s", s, sinkrunner.DeadLettered)
	}
}
