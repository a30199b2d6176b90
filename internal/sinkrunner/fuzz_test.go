package sinkrunner

import (
	"reflect"
	"testing"
	"time"
)

// FuzzDecodeEntry: a ledger value read back from Pebble or a changelog
// either fails to decode or decodes to an entry in a known state (or none
// yet) that survives an encode and a second decode unchanged.
func FuzzDecodeEntry(f *testing.F) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Add(EncodeEntry(Entry{State: Pending, Attempts: 2, InFlight: true, Source: "in/0/7", First: at, Updated: at}))
	f.Add(EncodeEntry(Entry{State: Unknown, LastError: "timeout", Class: "unknown", RecordKey: []byte{0xff}, Payload: []byte("{}"), Command: 9}))
	f.Add([]byte(`{"state":"bogus"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"state":"succeeded","first":"10000-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		switch e.State {
		case "", Pending, Succeeded, Failed, DeadLettered, Unknown:
		default:
			t.Fatalf("DecodeEntry(%q) gave state %q", b, e.State)
		}
		again, err := DecodeEntry(EncodeEntry(e))
		if err != nil {
			t.Fatalf("DecodeEntry(EncodeEntry(%+v)): %v", e, err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(e)) {
			t.Fatalf("round trip changed the entry:\n in:  %+v\n out: %+v", e, again)
		}
	})
}

// normalize makes entries comparable with DeepEqual: times by instant,
// empty byte slices as nil (omitempty drops them).
func normalize(e Entry) Entry {
	e.First, e.Updated = e.First.UTC(), e.Updated.UTC()
	if len(e.RecordKey) == 0 {
		e.RecordKey = nil
	}
	if len(e.Payload) == 0 {
		e.Payload = nil
	}
	return e
}
