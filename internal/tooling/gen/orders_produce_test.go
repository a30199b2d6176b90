package gen_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// The records on the broker are the plan's, each customer's in plan order
// in one partition, and simulating what a read_committed reader sees gives
// the returned truth.
func TestProduceOrders(t *testing.T) {
	brokers := broker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := gen.OrdersConfig{
		Brokers:        brokers,
		Topic:          "orders",
		Events:         3000,
		Partitions:     3,
		Customers:      40,
		DuplicateRate:  gen.DefaultDuplicateRate,
		ConflictRate:   gen.DefaultConflictRate,
		OutOfOrderRate: gen.DefaultOutOfOrderRate,
		Seed:           11,
	}
	var progress bytes.Buffer
	withProgress := cfg
	withProgress.Progress = &progress
	truth, err := gen.ProduceOrders(ctx, withProgress)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "3000/3000") {
		t.Errorf("progress output lacks 3000/3000: %q", progress.String())
	}
	if truth.Topic != "orders" || truth.Partitions != 3 || truth.Seed != 11 || truth.Customers != 40 ||
		truth.EventsTotal != 3000 || truth.DuplicatesInjected != 300 || truth.ConflictsInjected != 30 || truth.StaleInjected != 150 {
		t.Fatalf("truth %+v", truth)
	}
	if err := truth.Check(); err != nil {
		t.Fatal(err)
	}

	recs, err := verify.ReadAll(ctx, brokers, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3000 {
		t.Fatalf("read %d records, want 3000", len(recs))
	}
	// Read order (partition, offset) restricted to one customer is that
	// customer's plan order.
	p, err := gen.PlanOrders(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]gen.OrderRecord{}
	for i := range p.Len() {
		r := p.Record(i)
		want[r.Key] = append(want[r.Key], r)
	}
	got := map[string][]gen.OrderRecord{}
	partition := map[string]int32{}
	sim := gen.NewOrdersSimulator()
	for _, r := range recs {
		key := string(r.Key)
		if q, ok := partition[key]; ok && q != r.Partition {
			t.Fatalf("customer %s in partitions %d and %d", key, q, r.Partition)
		}
		partition[key] = r.Partition
		if len(r.Headers) != 2 {
			t.Fatalf("headers %v, want event-id and version", r.Headers)
		}
		v, err := strconv.ParseUint(r.Headers[gen.HeaderVersion], 10, 64)
		if err != nil {
			t.Fatalf("version header %q", r.Headers[gen.HeaderVersion])
		}
		got[key] = append(got[key], gen.OrderRecord{Key: key, Value: r.Value, EventID: r.Headers[gen.HeaderEventID], Version: v})
		sim.Apply(key, r.Headers[gen.HeaderEventID], r.Value)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("records on the broker differ from the plan")
	}
	read := sim.Truth()
	read.Topic, read.Partitions, read.Seed, read.Customers = truth.Topic, truth.Partitions, truth.Seed, truth.Customers
	if !reflect.DeepEqual(read, truth) {
		t.Fatalf("truth of the records read %+v, returned %+v", read, truth)
	}

	// A second run on the same topic would make the truth wrong.
	if _, err := gen.ProduceOrders(ctx, cfg); !errors.Is(err, gen.ErrTopicNotEmpty) ||
		!strings.Contains(err.Error(), `"orders" holds 3000 records`) {
		t.Fatalf("second run: err = %v", err)
	}
}

func TestProduceOrdersUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = gen.ProduceOrders(ctx, gen.OrdersConfig{Brokers: []string{addr}, Topic: "t", Events: 1})
	if !errors.Is(err, clientcfg.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

// Rate paces the writes: 2000 records at 5000/s take at least 0.39 s
// (the last pause is due at record 1900).
func TestProduceOrdersRate(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	began := time.Now()
	if _, err := gen.ProduceOrders(context.Background(), gen.OrdersConfig{Brokers: b.Addrs(), Topic: "paced", Events: 2000, Rate: 5000}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 380*time.Millisecond {
		t.Fatalf("2000 records at 5000/s took %v", took)
	}
}
