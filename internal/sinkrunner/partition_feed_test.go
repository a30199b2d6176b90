package sinkrunner_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/sinks"
)

// stuckSink holds every delivery whose payload starts with "stuck" until
// release is closed, and counts the others.
type stuckSink struct {
	release chan struct{}
	started chan struct{}
	once    sync.Once
	mu      sync.Mutex
	done    int
}

func (s *stuckSink) Deliver(ctx context.Context, d sinks.Delivery) error {
	if strings.HasPrefix(string(d.Payload), "stuck") {
		s.once.Do(func() { close(s.started) })
		select {
		case <-s.release:
		case <-ctx.Done():
			return sinks.UnknownError(ctx.Err())
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done++
	return nil
}

func (s *stuckSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// One outbox partition holds as many deliveries as the runner buffers,
// all waiting behind one key whose delivery does not return: the other
// partition's requests, written after, are still delivered. Before, one
// goroutine handed every partition's records on and waited for room in
// the full partition, so the others got nothing more.
func TestFullPartitionHoldsUpOnlyItself(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("feed"), env.Name("in")
	outbox := app + "-sink-hook"
	env.CreateTopic(outbox, 2)
	s := &stuckSink{release: make(chan struct{}), started: make(chan struct{})}
	defer close(s.release)
	startRunnerWith(t, env, app, "a", hookTopology(in, s), func(c *sinkrunner.Config) {
		c.Sinks.MaxBuffered = 4
		c.Sinks.AttemptTimeout = time.Minute
	}, nil)

	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(p int32, n int, key func(int) string, value string) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: outbox, Partition: p, Key: []byte(key(i)), Value: fmt.Appendf(nil, "%s-%d", value, i)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 20, func(int) string { return "stuck" }, "stuck")
	select {
	case <-s.started:
	case <-time.After(60 * time.Second):
		t.Fatal("the stuck delivery never started")
	}
	const n = 30
	produce(1, n, func(i int) string { return fmt.Sprintf("k%d", i%5) }, "free")
	defer func() { t.Logf("%d of the other partition's %d requests delivered", s.count(), n) }()
	waitFor(t, "every request of the other partition delivered", 30*time.Second, func() bool { return s.count() >= n })
}
