package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/testrig/testproxy"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
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
		time.Sleep(200 * time.Microsecond) // the pace of the records the producer must gather
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

// A burst producer sends what is written at once in one request per
// broker: the sink runners' ledger writer sends a batch's records to
// several partitions and waits for all of them, and each extra request is
// a round trip it waits for.
func TestBurstProducerSendsABurstInOneRequest(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A broker a few milliseconds away, as a replicated cluster's
	// acknowledgements are: the records of a burst reach the client while
	// its first request is out.
	proxy := testproxy.New()
	t.Cleanup(proxy.Close)
	proxy.SetLatency(2 * time.Millisecond)
	client := Client{Brokers: b.Addrs(), Dial: proxy.Dial}
	admin, err := Connect(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic = "bursts"
	if _, err := admin.Ensure(map[string]int32{topic: 6}, nil); err != nil {
		t.Fatal(err)
	}
	p, err := NewBurstProducer(client, Timeouts{}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	burst := func() {
		p.ResetTracked()
		for i := range 12 {
			p.Send(&Message{Topic: topic, Partition: int32(i % 6), Value: []byte("v"), Track: true})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := p.TrackedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	burst() // the producer id and the metadata
	var produces atomic.Int64
	c := b.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		produces.Add(1)
		return nil, nil, false // handled as usual
	})
	const bursts = 10
	for range bursts {
		burst()
	}
	n := produces.Load()
	t.Logf("%d bursts of 12 records to 6 partitions in %d produce requests", bursts, n)
	if n > bursts+2 {
		t.Fatalf("%d bursts went in %d produce requests; want one each (a few more at most)", bursts, n)
	}
}
