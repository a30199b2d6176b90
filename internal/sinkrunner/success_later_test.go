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

// orderSink records the payloads it is given, in order, and applies each.
type orderSink struct {
	idempotent bool
	mu         sync.Mutex
	seen       []string
	effects    map[string]int // per idempotency key
}

func (s *orderSink) Idempotent() bool { return s.idempotent }

func (s *orderSink) Deliver(_ context.Context, d sinks.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, string(d.Payload))
	s.effects[d.IdempotencyKey]++
	return nil
}

func (s *orderSink) state() (seen []string, effects map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	effects = map[string]int{}
	for k, v := range s.effects {
		effects[k] = v
	}
	return append([]string(nil), s.seen...), effects
}

// writeOutbox writes records straight to partition 0 of an outbox: key,
// payload and, when not empty, the idempotency key header.
func writeOutbox(t *testing.T, env *enginetest.Env, outbox string, recs ...[3]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, r := range recs {
		kr := &kgo.Record{Topic: outbox, Partition: 0, Key: []byte(r[0]), Value: []byte(r[1])}
		if r[2] != "" {
			kr.Headers = []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: []byte(r[2])}}
		}
		rs = append(rs, kr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A key's next delivery does not wait for the previous one's success to
// be written to the ledger: while that write is held, the next record of
// the same key reaches a sink that is idempotent (it needs no ledger write
// first), and the outbox offset is not committed past the held one. A
// sink that is not idempotent gets nothing more while it is held: the
// next in-flight mark is queued behind the success and is durable only
// after it. Before, every delivery waited for its success write.
func TestSuccessWriteDoesNotHoldTheKeysNextDelivery(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			env := enginetest.New(t)
			app, in := env.Name("later"), env.Name("in")
			outbox := app + "-sink-hook"
			env.CreateTopic(outbox, 1)
			s := &orderSink{idempotent: idempotent, effects: map[string]int{}}
			held, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			hold := func(key string, e sinkrunner.Entry) error {
				if key == "first" && e.State == sinkrunner.Succeeded {
					once.Do(func() { close(held) })
					<-release
				}
				return nil
			}
			var releaseOnce sync.Once
			free := func() { releaseOnce.Do(func() { close(release) }) }
			defer free()
			startRunnerWith(t, env, app, "a", hookTopology(in, s), nil, func(r *sinkrunner.Runner) { r.FailLedgerWrites(hold) })
			writeOutbox(t, env, outbox, [3]string{"k", "one", "first"}, [3]string{"k", "two", "second"})
			select {
			case <-held:
			case <-time.After(60 * time.Second):
				t.Fatal("the first success was never written")
			}
			if idempotent {
				waitFor(t, "the second delivery while the first success is held", 30*time.Second, func() bool {
					seen, _ := s.state()
					return len(seen) == 2
				})
			} else {
				time.Sleep(500 * time.Millisecond) // room for a wrong attempt
				if seen, _ := s.state(); len(seen) != 1 {
					t.Fatalf("the sink that is not idempotent got %v while the first success was held, want only the first", seen)
				}
			}
			time.Sleep(200 * time.Millisecond) // more than the commit interval
			if off := env.CommittedOffsets(app+"-sinks", outbox)[0]; off > 0 {
				t.Errorf("outbox offset %d committed while the first delivery's success was not written", off)
			}
			free()
			waitFor(t, "both delivered and committed", 30*time.Second, func() bool {
				seen, _ := s.state()
				return len(seen) == 2 && env.CommittedOffsets(app+"-sinks", outbox)[0] == 2
			})
			if seen, effects := s.state(); seen[0] != "one" || seen[1] != "two" || effects["first"] != 1 || effects["second"] != 1 {
				t.Errorf("deliveries %v, effects %v; want one then two, once each", seen, effects)
			}
		})
	}
}

// Two records of one key carry the same idempotency key: the second is
// settled by the first (skipped), also when it is read before the first
// one's success is written to the ledger. A sink that is not idempotent
// gets one request, and nothing is parked.
func TestSameIdempotencyKeyRightAfterItsSuccessIsSkipped(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("again"), env.Name("in")
	outbox := app + "-sink-hook"
	env.CreateTopic(outbox, 1)
	s := &orderSink{effects: map[string]int{}}
	slow := func(key string, e sinkrunner.Entry) error {
		if e.State == sinkrunner.Succeeded {
			time.Sleep(100 * time.Millisecond) // the fault: a slow success write, so the second record is read before it lands
		}
		return nil
	}
	rn := startRunnerWith(t, env, app, "a", hookTopology(in, s), nil, func(r *sinkrunner.Runner) { r.FailLedgerWrites(slow) })
	var recs [][3]string
	for i := range 5 {
		recs = append(recs, [3]string{"k", fmt.Sprint("v", i), fmt.Sprint("same-", i)}, [3]string{"k", fmt.Sprint("v", i), fmt.Sprint("same-", i)})
	}
	writeOutbox(t, env, outbox, recs...)
	waitFor(t, "every record settled", 30*time.Second, func() bool { return env.CommittedOffsets(app+"-sinks", outbox)[0] == 10 })
	seen, effects := s.state()
	var parked int64
	for _, st := range rn.r.Status() {
		parked += st.Outcomes[sinkrunner.OutcomeUnknown]
	}
	if len(seen) != 5 || parked != 0 {
		t.Errorf("%d requests (%v), effects %v, %d parked; want 5 requests, one per idempotency key, none parked", len(seen), seen, effects, parked)
	}
}
