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

// JSON text is UTF-8: a document with an invalid byte is refused, not
// decoded with the byte replaced by U+FFFD (encoding/json's behaviour,
// which would make "c\xff" and "c\xfe" the same string). A genuine U+FFFD,
// escaped or not, is text like any other.
func TestJSONInvalidUTF8Decode(t *testing.T) {
	c := serde.JSON[order]()
	for _, wire := range [][]byte{
		[]byte("{\"id\":\"c\xff\"}"),
		[]byte("{\"id\":\"\xc3\"}"),                 // a truncated sequence
		[]byte("{\"id\":\"\xed\xa0\x80\"}"),         // a UTF-16 surrogate
		[]byte("{\"id\":\"x\"}\xff"),                // outside the document
		[]byte("{\"id\":\"x\",\"other\":\"\xfe\"}"), // in an unknown field
		[]byte(`{"id":"\ud800"}`),                   // an escaped high half alone
		[]byte(`{"id":"\uDC00\ud800"}`),             // halves in the wrong order
		[]byte(`{"id":"\ud800\u0041"}`),             // a high half, then no low half
		[]byte(`{"id":"x","\udfff":1}`),             // in a member name
	} {
		_, err := c.Decode(wire)
		if !errors.Is(err, serde.ErrInvalidUTF8) {
			t.Errorf("Decode(%q) error %v, want ErrInvalidUTF8", wire, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "serde: json decode: byte ") {
			t.Errorf("error %q does not say where", err)
		}
	}
	for _, wire := range []string{`{"id":"c\ufffd"}`, "{\"id\":\"c\xef\xbf\xbd\"}"} {
		o, err := c.Decode([]byte(wire))
		if err != nil || o.ID != "c\ufffd" {
			t.Errorf("Decode(%q) = %+v, %v; want id c\\ufffd", wire, o, err)
		}
	}
	for wire, want := range map[string]string{
		`{"id":"\ud83d\udc22"}`:   "\U0001F422", // a whole pair
		`{"id":"\\ud800"}`:        `\ud800`,     // an escaped backslash, then text
		`{"id":"\"\ud83d\uDC22"}`: "\"\U0001F422",
	} {
		o, err := c.Decode([]byte(wire))
		if err != nil || o.ID != want {
			t.Errorf("Decode(%s) = %+v, %v; want id %q", wire, o, err, want)
		}
	}
}

// Encode refuses a string that is not valid UTF-8, where encoding/json
// would write U+FFFD in its place, and names where it is.
func TestJSONInvalidUTF8Encode(t *testing.T) {
	type inner struct {
		Tags map[string]string `json:"tags"`
	}
	type doc struct {
		Name  string  `json:"name"`
		Items []inner `json:"items"`
		Raw   []byte  `json:"raw"`
		Any   any     `json:"any"`
	}
	for _, tc := range []struct {
		v    doc
		path string
	}{
		{doc{Name: "a\xff"}, "value.name"},
		{doc{Items: []inner{{}, {Tags: map[string]string{"k": "\xc3"}}}}, `value.items[1].tags["k"]`},
		{doc{Items: []inner{{Tags: map[string]string{"k\xfe": "v"}}}}, `value.items[0].tags (a key)`},
		{doc{Any: []any{"ok", "bad\xff"}}, "value.any[1]"},
	} {
		_, err := serde.JSON[doc]().Encode(tc.v)
		if !errors.Is(err, serde.ErrInvalidUTF8) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Encode(%+v) error %v, want ErrInvalidUTF8 at %s", tc.v, err, tc.path)
		}
	}
	ok := doc{Name: "c\ufffd", Raw: []byte{0xff}, Any: map[string]any{"x": "\ufffd"}}
	b, err := serde.JSON[doc]().Encode(ok)
	if err != nil {
		t.Fatalf("Encode(%+v): %v", ok, err)
	}
	if back, err := serde.JSON[doc]().Decode(b); err != nil || back.Name != ok.Name || !bytes.Equal(back.Raw, ok.Raw) {
		t.Fatalf("round trip of %s = %+v, %v", b, back, err)
	}
	if _, err := serde.JSON[string]().Encode("\xff"); !errors.Is(err, serde.ErrInvalidUTF8) {
		t.Errorf("Encode of a bare invalid string: %v, want ErrInvalidUTF8", err)
	}
}

// String keeps bytes as they are, valid UTF-8 or not (Java's
// StringDeserializer would replace invalid sequences with U+FFFD; onceflow
// does not), so a key passes through a String codec byte for byte.
func TestStringKeepsInvalidUTF8(t *testing.T) {
	wire := []byte("k\xff\xc3")
	v, err := serde.String().Decode(wire)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := serde.String().Encode(v)
	if !bytes.Equal(out, wire) {
		t.Fatalf("String round trip of %q = %q", wire, out)
	}
}
