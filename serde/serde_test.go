package serde_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{serde.String().Name(), "string"},
		{serde.Bytes().Name(), "bytes"},
		{serde.Int64().Name(), "int64"},
		{serde.JSON[map[string]int]().Name(), "json"},
	} {
		if tc.got != tc.want {
			t.Errorf("Name() = %q, want %q", tc.got, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	c := serde.String()
	for _, tc := range []struct {
		name  string
		value string
		wire  []byte
	}{
		{"empty", "", []byte{}},
		{"ascii", "order-42", []byte("order-42")},
		{"utf8", "żółw 🐢", []byte("żółw 🐢")},
		{"nul byte", "a\x00b", []byte{'a', 0, 'b'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := c.Encode(tc.value)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(b, tc.wire) {
				t.Fatalf("Encode(%q) = %x, want %x", tc.value, b, tc.wire)
			}
			v, err := c.Decode(tc.wire)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if v != tc.value {
				t.Fatalf("Decode(%x) = %q, want %q", tc.wire, v, tc.value)
			}
		})
	}
	t.Run("null", func(t *testing.T) {
		v, err := c.Decode(nil)
		if err != nil || v != "" {
			t.Fatalf("Decode(nil) = %q, %v; want \"\", nil", v, err)
		}
	})
}

func TestBytes(t *testing.T) {
	c := serde.Bytes()
	for _, tc := range []struct {
		name string
		wire []byte
	}{
		{"null", nil},
		{"empty", []byte{}},
		{"binary", []byte{0, 1, 0xfe, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := c.Encode(tc.wire)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(b, tc.wire) || (b == nil) != (tc.wire == nil) {
				t.Fatalf("Encode(%#v) = %#v", tc.wire, b)
			}
			v, err := c.Decode(tc.wire)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			// A Kafka null must stay null, an empty value must stay empty:
			// they mean different things (a tombstone or not).
			if !bytes.Equal(v, tc.wire) || (v == nil) != (tc.wire == nil) {
				t.Fatalf("Decode(%#v) = %#v", tc.wire, v)
			}
		})
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInt64Wire checks the bytes against Kafka's LongSerializer, which
// writes the value big-endian in 8 bytes.
func TestInt64Wire(t *testing.T) {
	c := serde.Int64()
	for _, tc := range []struct {
		value int64
		wire  string
	}{
		{0, "0000000000000000"},
		{1, "0000000000000001"},
		{-1, "ffffffffffffffff"},
		{255, "00000000000000ff"},
		{256, "0000000000000100"},
		{-256, "ffffffffffffff00"},
		{1 << 32, "0000000100000000"},
		{0x0102030405060708, "0102030405060708"},
		{math.MaxInt64, "7fffffffffffffff"},
		{math.MinInt64, "8000000000000000"},
	} {
		wire := mustHex(t, tc.wire)
		b, err := c.Encode(tc.value)
		if err != nil {
			t.Fatalf("Encode(%d): %v", tc.value, err)
		}
		if !bytes.Equal(b, wire) {
			t.Errorf("Encode(%d) = %x, want %s", tc.value, b, tc.wire)
		}
		v, err := c.Decode(wire)
		if err != nil {
			t.Fatalf("Decode(%s): %v", tc.wire, err)
		}
		if v != tc.value {
			t.Errorf("Decode(%s) = %d, want %d", tc.wire, v, tc.value)
		}
	}
}

func TestInt64DecodeErrors(t *testing.T) {
	c := serde.Int64()
	for _, tc := range []struct {
		name     string
		wire     []byte
		wantNull bool
		wantMsg  string
	}{
		{"null", nil, true, "null"},
		{"empty", []byte{}, false, "got 0"},
		{"one byte", []byte{1}, false, "got 1"},
		{"four bytes (an int32)", []byte{0, 0, 0, 1}, false, "got 4"},
		{"seven bytes", make([]byte, 7), false, "got 7"},
		{"nine bytes", make([]byte, 9), false, "got 9"},
		{"text", []byte("12345678901"), false, "got 11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := c.Decode(tc.wire)
			if err == nil {
				t.Fatalf("Decode(%#v) = %d, want an error", tc.wire, v)
			}
			if got := errors.Is(err, serde.ErrNull); got != tc.wantNull {
				t.Errorf("errors.Is(%v, ErrNull) = %v, want %v", err, got, tc.wantNull)
			}
			if !strings.HasPrefix(err.Error(), "serde: ") || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q: want prefix \"serde: \" and %q", err, tc.wantMsg)
			}
			if v != 0 {
				t.Errorf("value with an error = %d, want 0", v)
			}
		})
	}
}

type order struct {
	ID       string            `json:"id"`
	Customer string            `json:"customer"`
	Amount   int64             `json:"amount"`
	Price    float64           `json:"price"`
	Tags     []string          `json:"tags,omitempty"`
	Attrs    map[string]string `json:"attrs,omitempty"`
	Paid     bool              `json:"paid"`
	Note     *string           `json:"note"`
}

func TestJSONRoundTrip(t *testing.T) {
	c := serde.JSON[order]()
	note := "leave at the door"
	for _, tc := range []struct {
		name string
		in   order
	}{
		{"zero", order{}},
		{"full", order{ID: "o-1", Customer: "c-7", Amount: -3, Price: 19.99, Tags: []string{"a", "b"},
			Attrs: map[string]string{"k": "v", "ü": "\"quoted\"\n"}, Paid: true, Note: &note}},
		{"big int", order{Amount: math.MaxInt64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := c.Encode(tc.in)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			out, err := c.Decode(b)
			if err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			if !reflect.DeepEqual(out, tc.in) {
				t.Fatalf("round trip of %+v gave %+v (wire %s)", tc.in, out, b)
			}
		})
	}
}

func TestJSONWire(t *testing.T) {
	c := serde.JSON[order]()
	b, err := c.Encode(order{ID: "o-1", Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"o-1","customer":"","amount":5,"price":0,"paid":false,"note":null}`
	if string(b) != want {
		t.Fatalf("Encode = %s, want %s", b, want)
	}
	// Whitespace around the document is not trailing data.
	o, err := c.Decode([]byte(" \n{\"id\":\"x\",\"amount\":2}\r\n\t"))
	if err != nil {
		t.Fatalf("Decode with surrounding whitespace: %v", err)
	}
	if o.ID != "x" || o.Amount != 2 {
		t.Fatalf("Decode = %+v", o)
	}
}

func TestJSONDecodeErrors(t *testing.T) {
	c := serde.JSON[order]()
	for _, tc := range []struct {
		name     string
		wire     []byte
		wantNull bool
	}{
		{"kafka null", nil, true},
		{"empty", []byte{}, false},
		{"blank", []byte("   "), false},
		{"truncated", []byte(`{"id":"o-1"`), false},
		{"not json", []byte("hello"), false},
		{"trailing garbage", []byte(`{"id":"o-1"} x`), false},
		{"two documents", []byte(`{"id":"o-1"}{"id":"o-2"}`), false},
		{"trailing comma", []byte(`{"id":"o-1",}`), false},
		{"wrong type", []byte(`{"amount":"five"}`), false},
		{"fraction into int", []byte(`{"amount":1.5}`), false},
		{"overflow", []byte(`{"amount":9223372036854775808}`), false},
		{"array for struct", []byte(`[1,2]`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Decode(tc.wire)
			if err == nil {
				t.Fatalf("Decode(%q): want an error", tc.wire)
			}
			if got := errors.Is(err, serde.ErrNull); got != tc.wantNull {
				t.Errorf("errors.Is(%v, ErrNull) = %v, want %v", err, got, tc.wantNull)
			}
			if !strings.HasPrefix(err.Error(), "serde: ") {
				t.Errorf("error %q does not start with \"serde: \"", err)
			}
		})
	}
}

// The JSON literal null is a document, not a Kafka null: it decodes to the
// zero value (encoding/json semantics), while nil bytes are ErrNull.
func TestJSONLiteralNull(t *testing.T) {
	o, err := serde.JSON[order]().Decode([]byte("null"))
	if err != nil {
		t.Fatalf("Decode(null): %v", err)
	}
	if !reflect.DeepEqual(o, order{}) {
		t.Fatalf("Decode(null) = %+v, want the zero value", o)
	}
	p, err := serde.JSON[*order]().Decode([]byte("null"))
	if err != nil || p != nil {
		t.Fatalf("Decode(null) into a pointer = %v, %v; want nil, nil", p, err)
	}
}

func TestJSONEncodeError(t *testing.T) {
	_, err := serde.JSON[float64]().Encode(math.NaN())
	if err == nil {
		t.Fatal("Encode(NaN): want an error")
	}
	if !strings.HasPrefix(err.Error(), "serde: json encode: ") {
		t.Fatalf("error %q: want prefix \"serde: json encode: \"", err)
	}
	_, err = serde.JSON[chan int]().Encode(make(chan int))
	if err == nil {
		t.Fatal("Encode(chan): want an error")
	}
}
