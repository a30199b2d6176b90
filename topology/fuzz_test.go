package topology

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/serde"
)

// FuzzDecodeVersion: a version store value decodes only from 8 bytes, and
// then to the big-endian number they hold.
func FuzzDecodeVersion(f *testing.F) {
	f.Add(binary.BigEndian.AppendUint64(nil, 3))
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeVersion(b)
		if len(b) != 8 {
			if err == nil {
				t.Fatalf("decodeVersion(%x) = %d: want an error", b, v)
			}
			return
		}
		if err != nil || !bytes.Equal(binary.BigEndian.AppendUint64(nil, v), b) {
			t.Fatalf("decodeVersion(%x) = %d, %v", b, v, err)
		}
	})
}

// fuzzHeaders splits b into headers: records separated by 0x00, each a key
// and a value separated by '='.
func fuzzHeaders(b []byte) []graph.Header {
	var hs []graph.Header
	for _, rec := range bytes.Split(b, []byte{0}) {
		k, v, _ := bytes.Cut(rec, []byte("="))
		hs = append(hs, graph.Header{Key: string(k), Value: v})
	}
	return hs
}

// FuzzEventIDHeader: the event id is the value of the last header of that
// name, any bytes; a record without one, or whose last one is empty, has
// no event id.
func FuzzEventIDHeader(f *testing.F) {
	f.Add([]byte("event-id=e-1\x00version=3"))
	f.Add([]byte("event-id=\x00event-id=e-2"))
	f.Add([]byte("event-id=e-1\x00event-id="))
	f.Add([]byte("event-id=\xff\xfe"))
	f.Add([]byte("version=1"))
	id := EventIDHeader("event-id")
	f.Fuzz(func(t *testing.T, b []byte) {
		hs := fuzzHeaders(b)
		got, ok := id.extract(&graph.Input{Headers: hs}, nil, nil)
		var want []byte
		found := false
		for _, h := range hs {
			if h.Key == "event-id" {
				want, found = h.Value, true
			}
		}
		if wantOK := found && len(want) > 0; ok != wantOK || ok && !bytes.Equal(got, want) {
			t.Fatalf("headers %q: event id %q, %v; want %q, %v", hs, got, ok, want, wantOK)
		}
	})
}

// FuzzParseWindowKey: a window store key either fails to parse or splits
// into a record key and a window that build the same key again; keys of
// one record key order by window start, then end.
func FuzzParseWindowKey(f *testing.F) {
	f.Add(windowKey([]byte("user-1"), 3_600_000, 7_200_000), int64(0), int64(-1))
	f.Add(windowKey(nil, -5, 5), int64(-6), int64(100))
	f.Add([]byte{prefixWindow, 0xff, 0xff, 0xff, 0xff}, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, dk []byte, start2, end2 int64) {
		kb, start, end, err := parseWindowKey(dk)
		if err != nil {
			return
		}
		if re := windowKey(kb, start, end); !bytes.Equal(re, dk) {
			t.Fatalf("windowKey(parseWindowKey(%x)) = %x", dk, re)
		}
		cmp := bytes.Compare(windowKey(kb, start2, end2), dk)
		want := 0
		switch {
		case start2 < start || start2 == start && end2 < end:
			want = -1
		case start2 > start || end2 > end:
			want = 1
		}
		if cmp != want {
			t.Fatalf("window [%d,%d) orders %d against [%d,%d), want %d", start2, end2, cmp, start, end, want)
		}
	})
}

// FuzzSplitValues: the values of a sliding window's raw entry either fail
// to split or split into values that append back to the entry.
func FuzzSplitValues(f *testing.F) {
	f.Add(appendValue(appendValue(nil, []byte("a")), []byte{}))
	f.Add([]byte{0, 0, 0, 9, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, err := splitValues(b)
		if err != nil {
			return
		}
		var re []byte
		for _, v := range vs {
			re = appendValue(re, v)
		}
		if !bytes.Equal(re, b) {
			t.Fatalf("appendValue(splitValues(%x)) = %x", b, re)
		}
	})
}

// FuzzWindowedCodecDecode: a windowed key shorter than its 16 bytes of
// window fails to decode; any other decodes, when its key does, to a
// windowed key that encodes back to the same bytes.
func FuzzWindowedCodecDecode(f *testing.F) {
	f.Add(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte("user-1"), 3_600_000), 7_200_000))
	f.Add(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 1<<63), 1<<64-1))
	f.Add([]byte("short"))
	f.Add([]byte{})
	strs, ints := WindowedCodec(serde.String()), WindowedCodec(serde.Int64())
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := strs.Decode(b)
		if len(b) < 16 {
			if err == nil {
				t.Fatalf("decoded %d bytes %x to %v: want an error", len(b), b, w)
			}
			return
		}
		if err == nil {
			if re, err := strs.Encode(w); err != nil || !bytes.Equal(re, b) {
				t.Fatalf("string key: %x decodes to %v, encodes back to %x, %v", b, w, re, err)
			}
		}
		wi, err := ints.Decode(b)
		if (err == nil) != (len(b) == 24) {
			t.Fatalf("int64 key: %d bytes %x decode to %v, %v", len(b), b, wi, err)
		}
		if err == nil {
			if re, err := ints.Encode(wi); err != nil || !bytes.Equal(re, b) {
				t.Fatalf("int64 key: %x decodes to %v, encodes back to %x, %v", b, wi, re, err)
			}
		}
	})
}
