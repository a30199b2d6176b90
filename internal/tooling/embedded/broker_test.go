package embedded_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

func start(t *testing.T, cfg embedded.Config) *embedded.Broker {
	t.Helper()
	b, err := embedded.Start(cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// roundTrip produces one record to topic (unless value is nil) and reads
// the topic's first record back.
func roundTrip(t *testing.T, addrs []string, topic string, value []byte) *kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addrs...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if value != nil {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
			t.Fatalf("create topic: %v", err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		if recs := fs.Records(); len(recs) > 0 {
			return recs[0]
		}
	}
}

func TestProduceConsume(t *testing.T) {
	b := start(t, embedded.Config{})
	addrs := b.Addrs()
	if len(addrs) != 1 {
		t.Fatalf("addrs = %v, want one", addrs)
	}
	r := roundTrip(t, addrs, "hello", []byte("world"))
	if string(r.Value) != "world" || string(r.Key) != "k" || r.Offset != 0 {
		t.Fatalf("got key %q value %q offset %d", r.Key, r.Value, r.Offset)
	}
	if b.Cluster() == nil {
		t.Fatal("Cluster() is nil")
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	b, err := embedded.Start(embedded.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, b.Addrs(), "kept", []byte("v1"))
	b.Close()
	b.Close() // idempotent

	b2 := start(t, embedded.Config{DataDir: dir})
	if r := roundTrip(t, b2.Addrs(), "kept", nil); string(r.Value) != "v1" {
		t.Fatalf("after restart read %q, want v1", r.Value)
	}
}

func TestAutoCreateTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, auto := range []bool{false, true} {
		b := start(t, embedded.Config{AutoCreateTopics: auto})
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.AllowAutoTopicCreation(), kgo.RecordRetries(2))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("v")}).FirstErr()
		cl.Close()
		if (err == nil) != auto {
			t.Errorf("AutoCreateTopics=%v: produce to a missing topic: %v", auto, err)
		}
		if auto {
			if n := len(b.Cluster().PartitionInfos("auto")); n != embedded.DefaultPartitions {
				t.Errorf("auto-created topic has %d partitions, want %d", n, embedded.DefaultPartitions)
			}
		}
	}
}

func TestAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = embedded.Start(embedded.Config{Addr: ln.Addr().String()})
	if !errors.Is(err, embedded.ErrAddrInUse) {
		t.Fatalf("err = %v, want ErrAddrInUse", err)
	}
	t.Log(err)
}

func TestFixedAddr(t *testing.T) {
	// Find a free port, release it, and ask the broker for it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := start(t, embedded.Config{Addr: addr})
	if got := b.Addrs(); len(got) != 1 || got[0] != addr {
		t.Fatalf("addrs = %v, want [%s]", got, addr)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"", true},
		{"127.0.0.1:0", true},
		{"localhost:9092", true},
		{":9092", true},
		{"10.0.0.1:9092", false},
		{"127.0.0.1", false},
		{"127.0.0.1:http", false},
		{"127.0.0.1:70000", false},
	} {
		err := embedded.Config{Addr: tc.addr}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
}

func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	start(t, embedded.Config{DataDir: dir})
	_, err := embedded.Start(embedded.Config{DataDir: dir})
	if !errors.Is(err, embedded.ErrDataDirInUse) {
		t.Fatalf("second broker on one data dir: err = %v, want ErrDataDirInUse", err)
	}
	t.Log(err)
}
