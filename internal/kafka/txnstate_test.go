package kafka

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// testBrokers is ONCEFLOW_KAFKA_BROKERS when set (real Kafka), else an
// embedded broker's address.
func testBrokers(t *testing.T) []string {
	t.Helper()
	if addrs := os.Getenv("ONCEFLOW_KAFKA_BROKERS"); addrs != "" {
		return strings.Split(addrs, ",")
	}
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b.Addrs()
}

// The coordinator describes a transactional id's transaction: unknown
// before its producer exists, Ongoing with its partition and start time
// while open, and no longer open once committed. On the embedded broker,
// or on real Kafka with ONCEFLOW_KAFKA_BROKERS.
func TestDescribeTransaction(t *testing.T) {
	run := time.Now().UnixNano()
	topic, id := fmt.Sprintf("describe-txn-%d", run), fmt.Sprintf("describe-txn-%d", run)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := Client{Brokers: testBrokers(t)}
	admin, err := Connect(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Ensure(map[string]int32{topic: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := admin.DescribeTransaction(id); err != nil || ok {
		t.Fatalf("an id no producer used: ok %v, %v; want unknown", ok, err)
	}
	p, err := NewProducer(client, Timeouts{}, id, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	began := time.Now()
	if err := p.Begin(); err != nil {
		t.Fatal(err)
	}
	p.Send(&Message{Topic: topic, Partition: 1, Value: []byte("v")})
	var d TxnDescription
	for deadline := time.Now().Add(30 * time.Second); ; {
		var ok bool
		d, ok, err = admin.DescribeTransaction(id)
		if err != nil {
			t.Fatal(err)
		}
		if ok && d.State == "Ongoing" && len(d.Partitions[topic]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the open transaction is described as %+v (ok %v)", d, ok)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !d.Open() || d.Ending() || !slices.Equal(d.Partitions[topic], []int32{1}) || d.ProducerID < 0 {
		t.Errorf("open transaction: %+v; want open, not ending, %s[1], a producer id", d, topic)
	}
	if age := time.Since(d.Start); d.Start.Before(began.Add(-5*time.Second)) || age > 30*time.Second {
		t.Errorf("open transaction started at %v, %v ago; began at %v", d.Start, age, began)
	}
	if d.Timeout <= 0 {
		t.Errorf("transaction timeout %v", d.Timeout)
	}
	if err := p.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		d, _, err = admin.DescribeTransaction(id)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Open() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the committed transaction is still described as %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !d.Start.IsZero() {
		t.Errorf("a committed transaction has a start time: %+v", d)
	}
}
