package sinkrunner_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/compile"
	"github.com/onceflow/onceflow/internal/enginetest"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testproxy"
)

// End to end on the embedded broker: the ledger write that records an
// attempt as out (written before each attempt to a sink that is not
// idempotent) is held, as by a slow changelog, while the runner's
// heartbeats stop reaching the coordinator. The group evicts the runner
// and another takes the partition over and delivers the request. When the
// held write returns, the evicted runner has had no heartbeat or commit
// confirmed for far more than half the session timeout: it must not make
// the attempt it had recorded.
func TestAdversaryLedgerWriteHeldPastProof(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("fence"), env.Name("in")
	env.CreateTopic(in, 1)
	const n = 20
	g, err := compile.Graph(hookTopology(in, &effectSink{}))
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%03d", i), Value: fmt.Appendf(nil, "v%03d", i)})
	}
	env.ProduceRecords(recs...)
	env.WaitCount(app+"-sink-hook", n, 60*time.Second)

	e := &effects{per: map[string]int{}, by: map[string]int{}}
	proxy := testproxy.New()
	defer proxy.Close()
	timeouts := kafka.Timeouts{Session: 6 * time.Second, Rebalance: 6 * time.Second, Heartbeat: time.Second}.WithDefaults()
	tune := func(dial bool) func(*sinkrunner.Config) {
		return func(c *sinkrunner.Config) {
			c.Timeouts = timeouts
			c.Sinks.Parallelism = 1
			if dial {
				c.Client.Dial = proxy.Dial
				c.Logger = hclog.New(&hclog.LoggerOptions{Name: "a", Level: hclog.Debug})
			}
		}
	}
	// The fifth request's attempt is recorded as out; that ledger write
	// holds until released.
	held := fmt.Sprintf("hook:%s/0/4", in)
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(key string, en sinkrunner.Entry) error {
		if key == held && en.InFlight && en.State == sinkrunner.Pending {
			once.Do(func() {
				close(holding)
				<-release
			})
		}
		return nil
	}
	startRunnerWith(t, env, app, "a", hookTopology(in, &effectSink{e: e, name: "a"}), tune(true),
		func(r *sinkrunner.Runner) { r.FailLedgerWrites(hold) })
	select {
	case <-holding:
	case <-time.After(60 * time.Second):
		t.Fatal("runner a never recorded the fifth attempt")
	}
	proxy.Blackhole(12) // Heartbeat: the coordinator hears nothing more from a's membership
	startRunnerWith(t, env, app, "b", hookTopology(in, &effectSink{e: e, name: "b"}), tune(false), nil)
	waitFor(t, "every request delivered by b", 90*time.Second, func() bool {
		per, _ := e.counts()
		return len(per) >= n
	})
	close(release)
	deadline := time.Now().Add(5 * time.Second) // room for what a zombie would do next
	for time.Now().Before(deadline) {
		if per, _ := e.counts(); per[held] > 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	per, by := e.counts()
	t.Logf("effects by runner %v; %s applied %d times", by, strings.TrimPrefix(held, "hook:"), per[held])
	if per[held] > 1 {
		t.Errorf("request %s applied %d times at a downstream that is not idempotent: the evicted runner made the attempt once its held ledger write returned", held, per[held])
	}
}
