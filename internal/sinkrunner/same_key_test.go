package sinkrunner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/sinks"
)

// slowSink counts the requests per idempotency key; each takes a while,
// so that deliveries of different record keys overlap.
type slowSink struct {
	mu    sync.Mutex
	calls map[string]int
}

func (s *slowSink) Idempotent() bool { return false }

func (s *slowSink) Deliver(ctx context.Context, d sinks.Delivery) error {
	s.mu.Lock()
	s.calls[d.IdempotencyKey]++
	s.mu.Unlock()
	time.Sleep(100 * time.Millisecond) // the slow downstream: deliveries of different record keys overlap
	return nil
}

func (s *slowSink) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[key]
}

// Two outbox records of different record keys carry one idempotency key
// and one payload: one delivery, as the ledger counts them. Different
// record keys are delivered in parallel, but not one idempotency key: the
// second reads the ledger once the first's writes are queued, and is
// skipped. A sink that is not idempotent gets each request once. (Before,
// both could read the ledger before either wrote: sent twice.)
func TestSameIdempotencyKeyOnTwoRecordKeysSentOnce(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("twokeys"), env.Name("in")
	outbox := app + "-sink-hook"
	env.CreateTopic(outbox, 1)
	s := &slowSink{calls: map[string]int{}}
	startRunner(t, env, app, "a", hookTopology(in, s))
	const pairs = 20
	var recs [][3]string
	for i := range pairs {
		recs = append(recs, [3]string{fmt.Sprint("a", i), "same", fmt.Sprint("x", i)}, [3]string{fmt.Sprint("b", i), "same", fmt.Sprint("x", i)})
	}
	writeOutbox(t, env, outbox, recs...)
	waitFor(t, "every record settled", 60*time.Second, func() bool { return env.CommittedOffsets(app+"-sinks", outbox)[0] == 2*pairs })
	for i := range pairs {
		if n := s.count(fmt.Sprint("x", i)); n != 1 {
			t.Errorf("x%d sent %d times to a sink that is not idempotent, want 1", i, n)
		}
	}
}
