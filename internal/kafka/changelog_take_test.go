package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// take keeps the records below the end, copies their keys and values out
// of the fetch's buffers (which a batch would otherwise keep in memory),
// and tells a tombstone (nil) from an empty value.
func TestProgressTake(t *testing.T) {
	buf := []byte("k1v1k2k3")
	recs := []*kgo.Record{
		{Offset: 10, Key: buf[0:2], Value: buf[2:4]},
		{Offset: 11, Key: buf[4:6], Value: nil},      // tombstone
		{Offset: 12, Key: buf[6:8], Value: buf[8:8]}, // empty value
		{Offset: 13, Key: []byte("late"), Value: []byte("x")},
	}
	pr := &progress{pos: 10, end: 13}
	batch, next := pr.take(recs)
	if next != 13 || pr.pos != 14 {
		t.Fatalf("next %d, pos %d; want 13 (the end), 14", next, pr.pos)
	}
	if len(batch) != 3 {
		t.Fatalf("%d records, want 3 (the one at the end is not read)", len(batch))
	}
	if string(batch[0].Key) != "k1" || string(batch[0].Value) != "v1" {
		t.Errorf("record 0 = %q=%q", batch[0].Key, batch[0].Value)
	}
	if batch[1].Value != nil {
		t.Errorf("a tombstone came back with value %q", batch[1].Value)
	}
	if batch[2].Value == nil || len(batch[2].Value) != 0 {
		t.Errorf("an empty value came back as %#v, want empty and not nil", batch[2].Value)
	}
	copy(buf, "XXXXXXXX")
	if string(batch[0].Key) != "k1" || string(batch[0].Value) != "v1" {
		t.Errorf("the batch shares the fetch's buffer: record 0 = %q=%q after it changed", batch[0].Key, batch[0].Value)
	}
}
