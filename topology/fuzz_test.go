package topology

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/onceflow/onceflow/internal/graph"
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
