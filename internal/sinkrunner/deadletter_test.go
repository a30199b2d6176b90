package sinkrunner_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// A dead letter and its ledger entry are written together or not at all:
// when the broker takes the dead-letter record and refuses the ledger
// entry that marks the delivery dead-lettered (as when the runner dies
// between the two, or the ledger partition fails), the runner starts
// again from its ledger, and the delivery ends with one dead letter and a
// ledger entry that says so; never a second dead letter (the sink keeps
// keys) nor a dead letter for a delivery parked as unknown (it does not).
func TestDeadLetterAndLedgerAtomic(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			env := enginetest.New(t)
			if env.Broker == nil {
				t.Skip("the fault is injected by the embedded broker")
			}
			app := env.Name("shop")
			in := env.Name("orders")
			env.CreateTopic(in, 1)
			hook := newScripted(idempotent)
			hook.then("bad-1", "permanent", "permanent")
			tp := topology.New("shop")
			topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.String(), nil)
			g, err := graph.Compile(tp)
			if err != nil {
				t.Fatal(err)
			}
			replica := env.Start(env.Config(app, "r1"), g)
			defer replica.Stop()
			outbox := app + "-sink-hook"

			// The first ledger write that marks a delivery dead-lettered is
			// refused; whatever else the request carries is taken.
			fault := env.Broker.Cluster().Fault(kfake.Fault{
				Keys: []kmsg.Key{kmsg.Produce}, Topic: graph.LedgerTopic(outbox), Err: kerr.MessageTooLarge,
				When: func(r kmsg.Request) bool {
					for _, t := range r.(*kmsg.ProduceRequest).Topics {
						for _, p := range t.Partitions {
							if bytes.Contains(p.Records, []byte(`"state":"dead-lettered"`)) {
								return true
							}
						}
					}
					return false
				},
			})
			env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte("customer-0"), Value: []byte("bad-1")})
			env.WaitCount(outbox, 1, 30*time.Second)
			rec := env.Read(outbox)[0]
			key := rec.Headers[sinks.HeaderIdempotencyKey]
			startRunner(t, env, app, "r1", tp)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := fault.Wait(ctx, 1); err != nil {
				t.Fatalf("the ledger write was never refused: %v", err)
			}
			until(t, "the delivery settled and committed", func() bool {
				s := ledgerState(t, env, app, "hook", key)
				return (s == sinkrunner.DeadLettered || s == sinkrunner.Unknown || s == sinkrunner.Succeeded) &&
					env.CommittedOffsets(app+"-sinks", outbox)[rec.Partition] > rec.Offset
			})
			dls := env.Read(outbox + "-dlq")
			state := ledgerState(t, env, app, "hook", key)
			calls, _ := hook.counts("bad-1")
			t.Logf("%d dead letters, ledger %s, %d attempts", len(dls), state, calls)
			// The sink that keeps keys gets the delivery again and it is
			// dead-lettered once; to the other, the attempt recorded as out
			// when the write failed is parked, with no dead letter.
			want, wantState := 1, sinkrunner.DeadLettered
			if !idempotent {
				want, wantState = 0, sinkrunner.Unknown
			}
			if len(dls) != want || state != wantState {
				t.Errorf("%d dead letters and ledger state %s; want %d and %s", len(dls), state, want, wantState)
			}
		})
	}
}
