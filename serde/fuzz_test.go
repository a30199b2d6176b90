package serde_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

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
// encoding/json accepts and is valid UTF-8 (encoding/json would replace
// invalid bytes), and that what it accepts survives an encode and a second
// decode unchanged.
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
		if err == nil && refErr != nil {
			t.Fatalf("Decode(%q) accepted what encoding/json refuses: %v", b, refErr)
		}
		if refErr == nil && utf8.Valid(b) && !surrogateEscape.Match(b) && err != nil {
			t.Fatalf("Decode(%q) refused valid UTF-8 JSON without surrogate escapes: %v", b, err)
		}
		if err == nil && !utf8.Valid(b) {
			t.Fatalf("Decode(%q) accepted invalid UTF-8", b)
		}
		if err == nil && bytes.Contains(mustMarshal(t, v), []byte("\ufffd")) && !replacement.Match(b) {
			t.Fatalf("Decode(%q) = %+v: a U+FFFD the input did not have", b, v)
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

var (
	// surrogateEscape matches a \u escape of half a surrogate pair.
	surrogateEscape = regexp.MustCompile(`(?i)\\ud[89a-f]`)
	// replacement matches U+FFFD, as is or escaped.
	replacement = regexp.MustCompile("(?i)\ufffd|\\\\ufffd")
)

// mustMarshal is json.Marshal with every string escaped to ASCII, so a
// U+FFFD in v shows as \ufffd.
func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %+v: %v", v, err)
	}
	return []byte(strconv.QuoteToASCII(string(b)))
}

// fuzzFixed checks a fixed-width decoder: it accepts exactly the inputs of
// width bytes, those round trip byte for byte (same), and it never panics.
func fuzzFixed[T any](f *testing.F, c serde.Codec[T], width int, same func(in, out []byte) bool) {
	f.Add(make([]byte, width))
	f.Add(bytes.Repeat([]byte{0xff}, width))
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{})
	f.Add(make([]byte, width+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c.Decode(b)
		if len(b) != width {
			if err == nil {
				t.Fatalf("Decode(%x) = %v: want an error for %d bytes", b, v, len(b))
			}
			if errors.Is(err, serde.ErrNull) {
				t.Fatalf("Decode(%x): ErrNull for non-nil bytes", b)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode(%x): %v", b, err)
		}
		out, err := c.Encode(v)
		if err != nil {
			t.Fatalf("Encode(%v): %v", v, err)
		}
		if !same(b, out) {
			t.Fatalf("Encode(Decode(%x)) = %x", b, out)
		}
	})
}

func FuzzInt32Decode(f *testing.F) { fuzzFixed(f, serde.Int32(), 4, bytes.Equal) }

func FuzzInt16Decode(f *testing.F) { fuzzFixed(f, serde.Int16(), 2, bytes.Equal) }

func FuzzFloat32Decode(f *testing.F) { fuzzFixed(f, serde.Float32(), 4, bytes.Equal) }

// Every NaN encodes as the canonical one (as Java's DoubleSerializer
// does); all other bits round trip.
func FuzzFloat64Decode(f *testing.F) {
	f.Add([]byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 1})
	fuzzFixed(f, serde.Float64(), 8, func(in, out []byte) bool {
		if v := math.Float64frombits(binary.BigEndian.Uint64(in)); v != v {
			return bytes.Equal(out, []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 0})
		}
		return bytes.Equal(in, out)
	})
}

// FuzzUUIDDecode checks that Decode accepts exactly the canonical text
// form in either case (what github.com/google/uuid would parse from 36
// characters, minus its other spellings), that what it accepts encodes
// back to the input in lower case, and that it never panics.
func FuzzUUIDDecode(f *testing.F) {
	f.Add([]byte("123e4567-e89b-12d3-a456-426614174000"))
	f.Add([]byte("123E4567-E89B-12D3-A456-426614174000"))
	f.Add([]byte("123e4567e89b12d3a456426614174000"))
	f.Add([]byte("123e4567-e89b-12d3-a456-42661417400g"))
	f.Add([]byte("0-0-0-0-0"))
	c := serde.UUID()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c.Decode(b)
		if !canonicalUUID(b) {
			if err == nil {
				t.Fatalf("Decode(%q) = %x: want an error", b, v)
			}
			if errors.Is(err, serde.ErrNull) {
				t.Fatalf("Decode(%q): ErrNull for non-nil bytes", b)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode(%q): %v", b, err)
		}
		if want := strings.ReplaceAll(strings.ToLower(string(b)), "-", ""); hex.EncodeToString(v[:]) != want {
			t.Fatalf("Decode(%q) = %x, want %s", b, v, want)
		}
		out, err := c.Encode(v)
		if err != nil {
			t.Fatalf("Encode(%x): %v", v, err)
		}
		if !bytes.Equal(out, bytes.ToLower(b)) {
			t.Fatalf("Encode(Decode(%q)) = %q", b, out)
		}
	})
}

// canonicalUUID is the reference for FuzzUUIDDecode, written
// independently of the codec: 8-4-4-4-12 hex digits.
func canonicalUUID(b []byte) bool {
	groups := strings.Split(string(b), "-")
	if len(groups) != 5 {
		return false
	}
	for i, n := range []int{8, 4, 4, 4, 12} {
		if len(groups[i]) != n {
			return false
		}
		if _, err := hex.DecodeString(groups[i]); err != nil {
			return false
		}
	}
	return true
}

// FuzzStringDecode checks that String takes any bytes, valid UTF-8 or not,
// and gives them back unchanged.
func FuzzStringDecode(f *testing.F) {
	f.Add([]byte("order-42"))
	f.Add([]byte("k\xff\xc3"))
	f.Add([]byte{})
	c := serde.String()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c.Decode(b)
		if err != nil {
			t.Fatalf("Decode(%q): %v", b, err)
		}
		out, err := c.Encode(v)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("Encode(Decode(%q)) = %q, %v", b, out, err)
		}
	})
}

// FuzzBytesDecode checks that Bytes passes any bytes through unchanged.
func FuzzBytesDecode(f *testing.F) {
	f.Add([]byte{0, 1, 0xfe, 0xff})
	f.Add([]byte{})
	c := serde.Bytes()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c.Decode(b)
		if err != nil || !bytes.Equal(v, b) {
			t.Fatalf("Decode(%x) = %x, %v", b, v, err)
		}
		out, err := c.Encode(v)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("Encode(Decode(%x)) = %x, %v", b, out, err)
		}
	})
}

// FuzzJSONEncode checks that Encode refuses exactly the values holding a
// string that is not valid UTF-8 (as a value, a list element, a map key or
// inside an any), and that what it encodes decodes back unchanged.
func FuzzJSONEncode(f *testing.F) {
	f.Add("o-1", "k", int64(3))
	f.Add("c\xff", "k", int64(0))
	f.Add("ok", "k\xfe", int64(-1))
	f.Add("\ufffd", "\\ufffd", int64(1<<62))
	c := serde.JSON[fuzzDoc]()
	f.Fuzz(func(t *testing.T, s, key string, n int64) {
		v := fuzzDoc{ID: s, N: n, Tags: []string{s, key}, Attrs: map[string]string{key: s}, Any: []any{s, map[string]any{key: n}}}
		b, err := c.Encode(v)
		if valid := utf8.ValidString(s) && utf8.ValidString(key); !valid {
			if !errors.Is(err, serde.ErrInvalidUTF8) {
				t.Fatalf("Encode(%+v) = %s, %v; want ErrInvalidUTF8", v, b, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Encode(%+v): %v", v, err)
		}
		back, err := c.Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(v)) of %s: %v", b, err)
		}
		if back.ID != s || back.Tags[1] != key || back.Attrs[key] != s || back.N != n {
			t.Fatalf("round trip of %+v gave %+v", v, back)
		}
	})
}
