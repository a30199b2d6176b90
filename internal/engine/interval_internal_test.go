package engine

import (
	"maps"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
)

func batchOf(topic string, partition int32, from, n int, bytes int) kafka.Batch {
	b := kafka.Batch{Topic: topic, Partition: partition, Bytes: bytes}
	for i := range n {
		b.Records = append(b.Records, kafka.Record{Topic: topic, Partition: partition, Offset: int64(from + i)})
	}
	return b
}

// The interval keeps the open transaction's input: the next offset and
// the first offset of each partition, records, bytes and the tally; it is
// full at its record count or maxTxnBytes, its deadline fires after the
// commit interval, and reset forgets it all; no broker.
func TestIntervalCountsTheOpenTransaction(t *testing.T) {
	iv := newInterval()
	defer iv.deadline.Stop()
	if iv.open || !iv.empty() || iv.full(1) {
		t.Fatalf("a new interval: open %v, empty %v, full %v", iv.open, iv.empty(), iv.full(1))
	}
	iv.begin(20 * time.Millisecond)
	b1, b2 := batchOf("in", 0, 10, 3, 300), batchOf("in", 0, 13, 2, 200)
	iv.starting(b1)
	iv.consumed(b1, "0_0")
	iv.starting(b2)
	iv.consumed(b2, "0_0")
	b3 := batchOf("in", 1, 50, 1, 100)
	iv.starting(b3) // processing it failed: it starts the transaction but is not consumed
	if want := map[int32]int64{0: 15}; !maps.Equal(iv.offsets["in"], want) {
		t.Errorf("offsets %v, want %v", iv.offsets["in"], want)
	}
	if want := map[int32]int64{0: 10, 1: 50}; !maps.Equal(iv.starts["in"], want) {
		t.Errorf("starts %v, want %v", iv.starts["in"], want)
	}
	if iv.records != 5 || iv.bytes != 500 || iv.pending.in["0_0"] != 5 || iv.empty() {
		t.Errorf("records %d, bytes %d, tallied %d, empty %v; want 5, 500, 5, false", iv.records, iv.bytes, iv.pending.in["0_0"], iv.empty())
	}
	if iv.full(6) || !iv.full(5) {
		t.Errorf("full at 6 records: %v, at 5: %v; want false, true", iv.full(6), iv.full(5))
	}
	iv.bytes = maxTxnBytes
	if !iv.full(1000) {
		t.Errorf("not full at maxTxnBytes of input")
	}
	select {
	case <-iv.deadline.C:
	case <-time.After(10 * time.Second):
		t.Fatal("the deadline did not fire")
	}
	iv.reset()
	if iv.open || !iv.empty() || len(iv.starts) != 0 || iv.bytes != 0 || len(iv.pending.in) != 0 {
		t.Errorf("after reset: open %v, empty %v, starts %v, bytes %d, tally %v", iv.open, iv.empty(), iv.starts, iv.bytes, iv.pending.in)
	}
	iv.pending.out["out"]++
	if iv.empty() {
		t.Errorf("an interval with an output counted empty")
	}
}
