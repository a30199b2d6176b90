package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/embedded"
)

// A transactional producer gathers records for transactionalLinger
// before it sends them: records written steadily in a transaction go in
// a few large requests, not one request per record or two, which is what
// the broker spent its CPU on.
func TestTransactionalProducerGathersRecords(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := Client{Brokers: b.Addrs()}
	admin, err := Connect(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic = "gathered"
	if _, err := admin.Ensure(map[string]int32{topic: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var produces atomic.Int64
	c := b.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		produces.Add(1)
		return nil, nil, false // handled as usual
	})

	p, err := NewProducer(client, Timeouts{}, "gathering", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Begin(); err != nil {
		t.Fatal(err)
	}
	// A record every 200 µs (or as often as the sleeps allow) for 100 ms:
	// an in-process broker answers a request well within that, so without
	// gathering each record or two goes in a request of its own.
	sent := 0
	start := time.Now()
	for end := start.Add(100 * time.Millisecond); time.Now().Before(end); sent++ {
		p.Send(&Message{Topic: topic, Value: []byte("v")})
		time.Sleep(200 * time.Microsecond)
	}
	if err := p.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	n := produces.Load()
	// At most one request per linger window, and a few for the last one.
	bound := int64(elapsed/transactionalLinger) + 3
	t.Logf("%d records in %d produce requests over %v (bound %d)", sent, n, elapsed.Round(time.Millisecond), bound)
	if n > bound {
		t.Fatalf("%d records went in %d produce requests over %v; want them gathered, at most %d requests", sent, n, elapsed.Round(time.Millisecond), bound)
	}
}
