//go:build long

package sinkrunner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/sinks"
)

// writeOutboxTo writes records (key, payload, idempotency key) to one
// partition of an outbox.
func writeOutboxTo(t *testing.T, env *enginetest.Env, outbox string, partition int32, recs ...[3]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, r := range recs {
		rs = append(rs, &kgo.Record{Topic: outbox, Partition: partition, Key: []byte(r[0]), Value: []byte(r[1]),
			Headers: []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: []byte(r[2])}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A rebalance moves an outbox partition to a second runner while the first
// runner's success write of a delivery is queued and not yet durable (the
// key's next delivery goes on: sent to a sink that is idempotent, waiting
// behind it for its in-flight mark with one that is not). The first
// runner's session end waits for those writes before it rejoins, so the
// second restores a ledger that holds them: no delivery is sent twice,
// none is parked as unknown.
func TestRevokedPartitionWaitsForQueuedSuccess(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) { revokeWithQueuedSuccess(t, idempotent) })
	}
}

func revokeWithQueuedSuccess(t *testing.T, idempotent bool) {
	env := enginetest.New(t)
	app, in := env.Name("revq"), env.Name("in")
	outbox := app + "-sink-hook"
	env.CreateTopic(outbox, 2)
	s := &orderSink{idempotent: idempotent, effects: map[string]int{}}
	held, release := make(chan struct{}), make(chan struct{})
	var heldOnce, releaseOnce sync.Once
	hold := func(key string, e sinkrunner.Entry) error {
		if key == "x" && e.State == sinkrunner.Succeeded {
			heldOnce.Do(func() { close(held) })
			<-release
		}
		return nil
	}
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free()
	a := startRunnerWith(t, env, app, "a", hookTopology(in, s), nil, func(r *sinkrunner.Runner) { r.FailLedgerWrites(hold) })
	waitFor(t, "the first runner delivering", 60*time.Second, a.r.Ready)
	// Partition 1: the one the balanced assignor moves to the second
	// runner (the first keeps its lowest).
	writeOutboxTo(t, env, outbox, 1, [3]string{"k", "one", "x"}, [3]string{"k", "two", "y"})
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the success of x was never written")
	}
	b := startRunnerWith(t, env, app, "b", hookTopology(in, s), nil, nil)
	waitFor(t, "the first runner's session ending", 30*time.Second, func() bool { return !a.r.Ready() })
	time.Sleep(time.Second) // the second waits in its join meanwhile
	free()
	waitFor(t, "both delivered and committed", 60*time.Second, func() bool {
		_, effects := s.state()
		return effects["x"] >= 1 && effects["y"] >= 1 && env.CommittedOffsets(app+"-sinks", outbox)[1] == 2
	})
	time.Sleep(500 * time.Millisecond) // a re-send would come now
	seen, effects := s.state()
	if effects["x"] != 1 || effects["y"] != 1 {
		t.Errorf("requests %v, effects %v; want x and y sent once each", seen, effects)
	}
	for _, rn := range []*runner{a, b} {
		for _, st := range rn.r.Status() {
			if n := st.Outcomes[sinkrunner.OutcomeUnknown]; n != 0 {
				t.Errorf("%d deliveries parked as unknown, want none", n)
			}
		}
	}
}
