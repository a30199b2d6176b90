package serde_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/onceflow/onceflow/serde"
)

// FuzzInt64Decode checks that Decode accepts exactly the 8-byte inputs,
// that those round trip byte for byte, and that it never panics.
func FuzzInt64Decode(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{})
	c := serde.Int64()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c.Decode(b)
		if len(b) != 8 {
			if err == nil {
				t.Fatalf("Decode(%x) = %d: want an error for %d bytes", b, v, len(b))
			}
			if errors.Is(err, serde.ErrNull) {
				t.Fatalf("Decode(%x): ErrNull for non-nil bytes", b)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode(%x): %v", b, err)
		}
		if want := int64(binary.BigEndian.Uint64(b)); v != want {
			t.Fatalf("Decode(%x) = %d, want %d", b, v, want)
		}
		out, err := c.Encode(v)
		if err != nil {
			t.Fatalf("Encode(%d): %v", v, err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("Encode(Decode(%x)) = %x", b, out)
		}
	})
}

type fuzzDoc struct {
	ID    string            `json:"id"`
	N     int64             `json:"n"`
	F     float64           `json:"f"`
	OK    bool              `json:"ok"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
	Any   any               `json:"any"`
	Next  *fuzzDoc          `json:"next"`
}

// FuzzJSONDecode checks that Decode never panics, accepts only what
// encoding/json accepts, and that what it accepts survives an encode and a
// second decode unchanged.
func FuzzJSONDecode(f *testing.F) {
	f.Add([]byte(`{"id":"o-1","n":3,"f":1.5,"ok":true,"tags":["a"],"attrs":{"k":"v"},"any":[1,"x",null,{"y":false}],"next":{"id":"o-2"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"id":"o-1"} trailing`))
	f.Add([]byte(`{"n":1e400}`))
	c := serde.JSON[fuzzDoc]()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c.Decode(b)
		var ref fuzzDoc
		refErr := json.Unmarshal(b, &ref)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("Decode(%q) error %v, encoding/json error %v", b, err, refErr)
		}
		if err != nil {
			if errors.Is(err, serde.ErrNull) {
				t.Fatalf("Decode(%q): ErrNull for non-nil bytes", b)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("Decode accepted invalid JSON %q", b)
		}
		enc, err := c.Encode(v)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", v, err)
		}
		again, err := c.Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(v)) of %s: %v", enc, err)
		}
		if !reflect.DeepEqual(v, again) {
			t.Fatalf("round trip changed the value:\n in:  %q\n v:   %+v\n enc: %s\n out: %+v", b, v, enc, again)
		}
	})
}
