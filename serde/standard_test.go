package serde_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde"
)

// The golden vectors below are the bytes Kafka's Java serializers
// (org.apache.kafka.common.serialization, 4.4.0) write for each value, as
// printed by serde/testdata/java/Serdes.java (TestJavaCompat, build tag
// kafka, runs the same vectors through the jar).

// wireCase is one value and the bytes Kafka writes for it.
type wireCase[T comparable] struct {
	value T
	wire  string
}

// checkWire encodes and decodes every case against its golden bytes.
func checkWire[T comparable](t *testing.T, c serde.Codec[T], cases []wireCase[T]) {
	t.Helper()
	for _, tc := range cases {
		wire := mustHex(t, tc.wire)
		b, err := c.Encode(tc.value)
		if err != nil {
			t.Fatalf("%s: Encode(%v): %v", c.Name(), tc.value, err)
		}
		if !bytes.Equal(b, wire) {
			t.Errorf("%s: Encode(%v) = %x, want %s", c.Name(), tc.value, b, tc.wire)
		}
		v, err := c.Decode(wire)
		if err != nil {
			t.Fatalf("%s: Decode(%s): %v", c.Name(), tc.wire, err)
		}
		if v != tc.value {
			t.Errorf("%s: Decode(%s) = %v, want %v", c.Name(), tc.wire, v, tc.value)
		}
	}
}

var int32Cases = []wireCase[int32]{
	{0, "00000000"},
	{1, "00000001"},
	{-1, "ffffffff"},
	{-2, "fffffffe"},
	{256, "00000100"},
	{0x01020304, "01020304"},
	{math.MaxInt32, "7fffffff"},
	{math.MinInt32, "80000000"},
}

var int16Cases = []wireCase[int16]{
	{0, "0000"},
	{1, "0001"},
	{-1, "ffff"},
	{258, "0102"},
	{math.MaxInt16, "7fff"},
	{math.MinInt16, "8000"},
}

var float64Cases = []wireCase[float64]{
	{0, "0000000000000000"},
	{math.Copysign(0, -1), "8000000000000000"},
	{1, "3ff0000000000000"},
	{-2.5, "c004000000000000"},
	{0.1, "3fb999999999999a"},
	{math.MaxFloat64, "7fefffffffffffff"},
	{math.SmallestNonzeroFloat64, "0000000000000001"},
	{math.Inf(1), "7ff0000000000000"},
	{math.Inf(-1), "fff0000000000000"},
}

var float32Cases = []wireCase[float32]{
	{0, "00000000"},
	{float32(math.Copysign(0, -1)), "80000000"},
	{1, "3f800000"},
	{-2.5, "c0200000"},
	{0.1, "3dcccccd"},
	{math.MaxFloat32, "7f7fffff"},
	{float32(math.Inf(1)), "7f800000"},
}

var uuidCases = []wireCase[[16]byte]{
	{[16]byte{}, "30303030303030302d303030302d303030302d303030302d303030303030303030303030"},
	// 123e4567-e89b-12d3-a456-426614174000
	{[16]byte{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00},
		"31323365343536372d653839622d313264332d613435362d343236363134313734303030"},
	// ffffffff-ffff-ffff-ffff-ffffffffffff
	{[16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"66666666666666662d666666662d666666662d666666662d666666666666666666666666"},
}

func TestStandardWire(t *testing.T) {
	t.Run("int32", func(t *testing.T) { checkWire(t, serde.Int32(), int32Cases) })
	t.Run("int16", func(t *testing.T) { checkWire(t, serde.Int16(), int16Cases) })
	t.Run("float64", func(t *testing.T) { checkWire(t, serde.Float64(), float64Cases) })
	t.Run("float32", func(t *testing.T) { checkWire(t, serde.Float32(), float32Cases) })
	t.Run("uuid", func(t *testing.T) { checkWire(t, serde.UUID(), uuidCases) })
}

// Java's DoubleSerializer writes every NaN as 7ff8000000000000
// (doubleToLongBits); its FloatSerializer keeps the raw bits. Decoding
// keeps the bits in both.
func TestFloatNaN(t *testing.T) {
	payload64 := math.Float64frombits(0x7ff8000000000001)
	b, err := serde.Float64().Encode(payload64)
	if err != nil || !bytes.Equal(b, mustHex(t, "7ff8000000000000")) {
		t.Fatalf("Float64 Encode(NaN with payload) = %x, %v; want 7ff8000000000000", b, err)
	}
	v, err := serde.Float64().Decode(mustHex(t, "7ff0000000000001"))
	if err != nil || math.Float64bits(v) != 0x7ff0000000000001 {
		t.Fatalf("Float64 Decode(7ff0000000000001) = %x, %v; want the same bits", math.Float64bits(v), err)
	}
	payload32 := math.Float32frombits(0x7fc00001)
	b, err = serde.Float32().Encode(payload32)
	if err != nil || !bytes.Equal(b, mustHex(t, "7fc00001")) {
		t.Fatalf("Float32 Encode(NaN with payload) = %x, %v; want 7fc00001", b, err)
	}
	f, err := serde.Float32().Decode(mustHex(t, "7fc00001"))
	if err != nil || math.Float32bits(f) != 0x7fc00001 {
		t.Fatalf("Float32 Decode(7fc00001) = %x, %v; want the same bits", math.Float32bits(f), err)
	}
}

// Java prints UUIDs in lower case but parses either case.
func TestUUIDUpperCase(t *testing.T) {
	v, err := serde.UUID().Decode([]byte("123E4567-E89B-12D3-A456-426614174000"))
	if err != nil {
		t.Fatalf("Decode(upper case): %v", err)
	}
	b, _ := serde.UUID().Encode(v)
	if string(b) != "123e4567-e89b-12d3-a456-426614174000" {
		t.Fatalf("Encode(Decode(upper case)) = %s", b)
	}
}

// decodeErr decodes with any codec and reports only the error.
type decodeErr func([]byte) error

func errOf[T any](c serde.Codec[T]) decodeErr {
	return func(b []byte) error { _, err := c.Decode(b); return err }
}

func TestStandardDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decode   decodeErr
		wire     []byte
		wantNull bool
		wantMsg  string
	}{
		{"int32 null", errOf(serde.Int32()), nil, true, "null"},
		{"int32 empty", errOf(serde.Int32()), []byte{}, false, "int32 needs 4 bytes, got 0"},
		{"int32 a short", errOf(serde.Int32()), []byte{0, 1}, false, "got 2"},
		{"int32 a long", errOf(serde.Int32()), make([]byte, 8), false, "got 8"},
		{"int16 null", errOf(serde.Int16()), nil, true, "null"},
		{"int16 one byte", errOf(serde.Int16()), []byte{1}, false, "int16 needs 2 bytes, got 1"},
		{"int16 an int", errOf(serde.Int16()), make([]byte, 4), false, "got 4"},
		{"float64 null", errOf(serde.Float64()), nil, true, "null"},
		{"float64 a float", errOf(serde.Float64()), make([]byte, 4), false, "float64 needs 8 bytes, got 4"},
		{"float32 null", errOf(serde.Float32()), nil, true, "null"},
		{"float32 a double", errOf(serde.Float32()), make([]byte, 8), false, "float32 needs 4 bytes, got 8"},
		{"uuid null", errOf(serde.UUID()), nil, true, "null"},
		{"uuid empty", errOf(serde.UUID()), []byte{}, false, "uuid needs 36 bytes, got 0"},
		{"uuid 16 raw bytes", errOf(serde.UUID()), make([]byte, 16), false, "got 16"},
		{"uuid no hyphens", errOf(serde.UUID()), []byte("123e4567e89b12d3a456426614174000"), false, "got 32"},
		{"uuid braces", errOf(serde.UUID()), []byte("{123e4567-e89b-12d3-a456-426614174000}"), false, "got 38"},
		{"uuid hyphen moved", errOf(serde.UUID()), []byte("123e4567-e89b-12d3-a4564-26614174000"), false, "'-' at position 23"},
		{"uuid underscore", errOf(serde.UUID()), []byte("123e4567_e89b-12d3-a456-426614174000"), false, "'-' at position 8"},
		{"uuid not hex", errOf(serde.UUID()), []byte("123e4567-e89b-12d3-a456-42661417400g"), false, "non-hex character at position 34"},
		{"uuid sign", errOf(serde.UUID()), []byte("+23e4567-e89b-12d3-a456-426614174000"), false, "non-hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode(tc.wire)
			if err == nil {
				t.Fatalf("Decode(%q): want an error", tc.wire)
			}
			if got := errors.Is(err, serde.ErrNull); got != tc.wantNull {
				t.Errorf("errors.Is(%v, ErrNull) = %v, want %v", err, got, tc.wantNull)
			}
			if !strings.HasPrefix(err.Error(), "serde: ") || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q: want prefix \"serde: \" and %q", err, tc.wantMsg)
			}
		})
	}
}

func TestStandardNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{serde.Int32().Name(), "int32"},
		{serde.Int16().Name(), "int16"},
		{serde.Float64().Name(), "float64"},
		{serde.Float32().Name(), "float32"},
		{serde.UUID().Name(), "uuid"},
	} {
		if tc.got != tc.want {
			t.Errorf("Name() = %q, want %q", tc.got, tc.want)
		}
	}
}
