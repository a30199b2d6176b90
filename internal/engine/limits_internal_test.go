package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
)

// A rejected record is cut until it fits the limit: the value first, then
// the input's own headers, then the key; the note names what was cut.
func TestFitRejected(t *testing.T) {
	const limit = 10000
	d := &outputPolicy{limit: sizeLimit{batch: limit, topic: "app-rejected"}}
	reject := []graph.Header{
		{Key: wire.HeaderRejectReason, Value: []byte(wire.ReasonTooLarge)},
		{Key: wire.HeaderSource, Value: []byte("in/0/7")},
		{Key: wire.HeaderRejectError, Value: []byte("engine: too large")},
	}
	big := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	for _, tc := range []struct {
		name       string
		key, value int
		own        int // own headers of 3000 bytes each
		note       string
		keepKey    bool
		ownLeft    int
	}{
		{name: "fits", key: 10, value: 5000, note: "", keepKey: true},
		{name: "value cut", key: 10, value: 50000, own: 1, note: "value=50000", keepKey: true, ownLeft: 1},
		{name: "headers dropped", key: 10, value: 50000, own: 4, note: "value=50000,headers=4", keepKey: true},
		{name: "key cut", key: 30000, value: 50000, own: 1, note: "value=50000,headers=1,key=30000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hs []graph.Header
			for range tc.own {
				hs = append(hs, graph.Header{Key: "own", Value: big(3000)})
			}
			hs = append(hs, reject...)
			m := kafka.Message{Key: big(tc.key), Value: big(tc.value), Headers: hs}
			d.fitRejected(&m, tc.own)
			if n := recordBytes(m.Key, m.Value, m.Headers, nil); n > limit {
				t.Errorf("record takes %d bytes after the cut, limit %d", n, limit)
			}
			note := ""
			for _, h := range m.Headers {
				if h.Key == wire.HeaderRejectTruncated {
					note = string(h.Value)
				}
			}
			if note != tc.note {
				t.Errorf("note %q, want %q", note, tc.note)
			}
			if tc.note == "" && (len(m.Value) != tc.value || len(m.Headers) != tc.own+3) {
				t.Errorf("a record that fits was changed")
			}
			if tc.keepKey != (len(m.Key) == tc.key) {
				t.Errorf("key kept %d of %d bytes", len(m.Key), tc.key)
			}
			for _, want := range []string{wire.HeaderRejectReason, wire.HeaderSource, wire.HeaderRejectError} {
				found := false
				for _, h := range m.Headers {
					found = found || h.Key == want
				}
				if !found {
					t.Errorf("header %s lost", want)
				}
			}
			own := 0
			for _, h := range m.Headers {
				if h.Key == "own" {
					own++
				}
			}
			if own != tc.ownLeft && tc.note != "" {
				t.Errorf("%d own headers left of %d, want %d", own, tc.own, tc.ownLeft)
			}
		})
	}
}

// The error names the record's topic when its own limit is the one
// exceeded, and the topic that holds the limit down otherwise.
func TestTooLargeErrorNamesTheLimitingTopic(t *testing.T) {
	l := sizeLimit{batch: 1000, topic: "app-rejected", of: map[string]int{"out": 1000, "big": 5000, "app-rejected": 1000}}
	if msg := (&errTooLarge{topic: "out", size: 2000, limit: l}).Error(); !strings.Contains(msg, "(max.message.bytes of out)") {
		t.Errorf("%s", msg)
	}
	if msg := (&errTooLarge{topic: "big", size: 2000, limit: l}).Error(); !strings.Contains(msg, "max.message.bytes of app-rejected, the smallest") {
		t.Errorf("%s", msg)
	}
}

// FuzzFitRejected: whatever the sizes of a rejected record's key, value,
// own headers and error text, and whatever the limit (from 1 KiB), the cut
// record fits the limit, keeps its reason and lineage headers, and says
// what was cut exactly when something was.
func FuzzFitRejected(f *testing.F) {
	f.Add(uint32(1<<20), uint32(10), uint32(2<<20), uint8(1), uint32(3000), uint16(100))
	f.Add(uint32(1024), uint32(5000), uint32(5000), uint8(3), uint32(900), uint16(2000))
	f.Add(uint32(1024), uint32(0), uint32(0), uint8(0), uint32(0), uint16(0))
	f.Add(uint32(4096), uint32(3<<20/2), uint32(0), uint8(0), uint32(0), uint16(60000))
	f.Fuzz(func(t *testing.T, limit, key, value uint32, own uint8, ownSize uint32, errLen uint16) {
		limit = 1024 + limit%(8<<20)
		key, value, ownSize = key%(4<<20), value%(4<<20), ownSize%(1<<20)
		d := &outputPolicy{limit: sizeLimit{batch: int(limit), topic: "app-rejected"}}
		var hs []graph.Header
		for range own % 8 {
			hs = append(hs, graph.Header{Key: "own", Value: make([]byte, ownSize)})
		}
		hs = append(hs,
			graph.Header{Key: wire.HeaderRejectReason, Value: []byte(wire.ReasonTooLarge)},
			graph.Header{Key: wire.HeaderSource, Value: []byte("some-input-topic/12/1234567890")},
			graph.Header{Key: wire.HeaderRejectError, Value: bytes.Repeat([]byte{'e'}, int(errLen))},
		)
		m := kafka.Message{Key: make([]byte, key), Value: make([]byte, value), Headers: hs}
		before := recordBytes(m.Key, m.Value, m.Headers, nil)
		d.fitRejected(&m, int(own%8))
		if n := recordBytes(m.Key, m.Value, m.Headers, nil); n > int(limit) {
			t.Fatalf("record takes %d bytes after the cut, limit %d", n, limit)
		}
		var reason, source, note bool
		for _, h := range m.Headers {
			reason = reason || h.Key == wire.HeaderRejectReason && string(h.Value) == wire.ReasonTooLarge
			source = source || h.Key == wire.HeaderSource && len(h.Value) > 0
			note = note || h.Key == wire.HeaderRejectTruncated
		}
		if !reason || !source {
			t.Fatalf("reason kept %v, lineage kept %v", reason, source)
		}
		if note != (before > int(limit)) {
			t.Fatalf("truncation note %v for a record of %d bytes, limit %d", note, before, limit)
		}
	})
}
