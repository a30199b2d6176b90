// Package serde holds the codecs that turn Kafka record keys and values into
// Go values and back.
//
// The fixed-width and text codecs write the bytes of Kafka's standard Java
// serdes, so records written by Java clients read back and the other way
// round:
//
//	Kafka (org.apache.kafka.common.serialization)  onceflow  wire form
//	StringSerializer                                String    UTF-8 bytes
//	ByteArraySerializer                             Bytes     the bytes
//	LongSerializer                                  Int64     8 bytes, big-endian two's complement
//	IntegerSerializer                               Int32     4 bytes, big-endian two's complement
//	ShortSerializer                                 Int16     2 bytes, big-endian two's complement
//	DoubleSerializer                                Float64   8 bytes, IEEE 754 binary64, big-endian
//	FloatSerializer                                 Float32   4 bytes, IEEE 754 binary32, big-endian
//	UUIDSerializer                                  UUID      36 bytes, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
//
// A Codec is stateless and safe for concurrent use. Decode errors are
// permanent for the bytes given: the runtime sends a record it cannot decode
// to the application's rejected-records topic and goes on.
package serde

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"
)

// Codec encodes and decodes values of one type.
type Codec[T any] interface {
	// Name names the format, for Describe and error messages.
	Name() string
	// Encode returns the wire form of v.
	Encode(v T) ([]byte, error)
	// Decode parses b. A nil b is a Kafka null (a tombstone value or a
	// missing key); codecs that have no null form return ErrNull.
	Decode(b []byte) (T, error)
}

// ErrNull is returned by Decode when a codec has no representation for a
// Kafka null. Not retryable.
var ErrNull = errors.New("serde: null value")

// ErrInvalidUTF8 is wrapped by the errors of a text format's Decode and
// Encode (JSON) for bytes or strings that are not valid UTF-8. Not
// retryable.
var ErrInvalidUTF8 = errors.New("invalid UTF-8")

// String is UTF-8 text, the bytes as they are. Null decodes to "".
func String() Codec[string] { return stringCodec{} }

type stringCodec struct{}

func (stringCodec) Name() string                    { return "string" }
func (stringCodec) Encode(v string) ([]byte, error) { return []byte(v), nil }
func (stringCodec) Decode(b []byte) (string, error) { return string(b), nil }

// Bytes passes bytes through unchanged. Null decodes to nil.
func Bytes() Codec[[]byte] { return bytesCodec{} }

type bytesCodec struct{}

func (bytesCodec) Name() string                    { return "bytes" }
func (bytesCodec) Encode(v []byte) ([]byte, error) { return v, nil }
func (bytesCodec) Decode(b []byte) ([]byte, error) { return b, nil }

// Int64 is a signed 64-bit integer in 8 big-endian bytes, the format of
// Kafka's LongSerializer. Any other length is an error.
func Int64() Codec[int64] { return int64Codec{} }

type int64Codec struct{}

func (int64Codec) Name() string { return "int64" }

func (int64Codec) Encode(v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(v)), nil
}

func (int64Codec) Decode(b []byte) (int64, error) {
	if err := fixed("int64", b, 8); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// Int32 is a signed 32-bit integer in 4 big-endian bytes, the format of
// Kafka's IntegerSerializer. Any other length is an error.
func Int32() Codec[int32] { return int32Codec{} }

type int32Codec struct{}

func (int32Codec) Name() string { return "int32" }

func (int32Codec) Encode(v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(make([]byte, 0, 4), uint32(v)), nil
}

func (int32Codec) Decode(b []byte) (int32, error) {
	if err := fixed("int32", b, 4); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// Int16 is a signed 16-bit integer in 2 big-endian bytes, the format of
// Kafka's ShortSerializer. Any other length is an error.
func Int16() Codec[int16] { return int16Codec{} }

type int16Codec struct{}

func (int16Codec) Name() string { return "int16" }

func (int16Codec) Encode(v int16) ([]byte, error) {
	return binary.BigEndian.AppendUint16(make([]byte, 0, 2), uint16(v)), nil
}

func (int16Codec) Decode(b []byte) (int16, error) {
	if err := fixed("int16", b, 2); err != nil {
		return 0, err
	}
	return int16(binary.BigEndian.Uint16(b)), nil
}

// Float64 is an IEEE 754 double in 8 big-endian bytes, the format of
// Kafka's DoubleSerializer. Like Java's Double.doubleToLongBits, Encode
// writes every NaN as the canonical 7ff8000000000000; Decode keeps the
// bits it is given. Any other length is an error.
func Float64() Codec[float64] { return float64Codec{} }

type float64Codec struct{}

func (float64Codec) Name() string { return "float64" }

// canonicalNaN64 is Java's Double.NaN, what doubleToLongBits writes for
// every NaN.
const canonicalNaN64 = 0x7ff8000000000000

func (float64Codec) Encode(v float64) ([]byte, error) {
	bits := math.Float64bits(v)
	if v != v {
		bits = canonicalNaN64
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), bits), nil
}

func (float64Codec) Decode(b []byte) (float64, error) {
	if err := fixed("float64", b, 8); err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}

// Float32 is an IEEE 754 float in 4 big-endian bytes, the format of
// Kafka's FloatSerializer, which writes the raw bits (NaN payloads
// included). Any other length is an error.
func Float32() Codec[float32] { return float32Codec{} }

type float32Codec struct{}

func (float32Codec) Name() string { return "float32" }

func (float32Codec) Encode(v float32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(make([]byte, 0, 4), math.Float32bits(v)), nil
}

func (float32Codec) Decode(b []byte) (float32, error) {
	if err := fixed("float32", b, 4); err != nil {
		return 0, err
	}
	return math.Float32frombits(binary.BigEndian.Uint32(b)), nil
}

// UUID is a UUID in its 36-character text form as UTF-8
// ("123e4567-e89b-12d3-a456-426614174000"), the format of Kafka's
// UUIDSerializer. Encode writes lower-case hex, as Java's UUID.toString
// does; Decode accepts either case and nothing else: no braces, no "urn:"
// prefix, no missing hyphens. The value is the UUID's 16 bytes, so
// [16]byte-based types (github.com/google/uuid's UUID) convert directly.
func UUID() Codec[[16]byte] { return uuidCodec{} }

type uuidCodec struct{}

func (uuidCodec) Name() string { return "uuid" }

func (uuidCodec) Encode(v [16]byte) ([]byte, error) {
	b := make([]byte, 0, 36)
	for i, x := range v {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = hex.AppendEncode(b, []byte{x})
	}
	return b, nil
}

func (uuidCodec) Decode(b []byte) ([16]byte, error) {
	var u [16]byte
	if err := fixed("uuid", b, 36); err != nil {
		return u, err
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if b[i] != '-' {
				return [16]byte{}, fmt.Errorf("serde: uuid needs '-' at position %d, got %q", i, b[i])
			}
			i++
			continue
		}
		hi, ok1 := unhex(b[i])
		lo, ok2 := unhex(b[i+1])
		if !ok1 || !ok2 {
			return [16]byte{}, fmt.Errorf("serde: uuid has a non-hex character at position %d: %q", i, b[i:i+2])
		}
		u[j] = hi<<4 | lo
		j++
		i += 2
	}
	return u, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// fixed checks that b is a non-null value of n bytes for the named codec.
func fixed(name string, b []byte, n int) error {
	if b == nil {
		return ErrNull
	}
	if len(b) != n {
		return fmt.Errorf("serde: %s needs %d bytes, got %d", name, n, len(b))
	}
	return nil
}

// JSON encodes T with encoding/json. Decoding rejects a Kafka null, trailing
// data and malformed documents. The JSON literal null decodes to T's zero
// value.
//
// JSON text is UTF-8 (RFC 8259): Decode rejects a document that is not
// valid UTF-8, or that escapes half a UTF-16 surrogate pair ("\ud800"),
// where encoding/json would silently replace each invalid byte or escape
// with U+FFFD (two customers "c\xff" and "c\xfe" would become one),
// and Encode rejects a value holding a string that is not valid UTF-8, which
// encoding/json would likewise replace. Bytes that must pass unchanged
// belong in a []byte field (base64 in JSON) or in a Bytes codec.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Name() string { return "json" }

func (jsonCodec[T]) Encode(v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("serde: json encode: %w", err)
	}
	// encoding/json writes the escape \ufffd for every invalid byte of a
	// string; only an output holding one can have replaced anything.
	if bytes.Contains(b, escapedReplacement) {
		if path, bad := invalidUTF8(reflect.ValueOf(v), "", 0); bad {
			return nil, fmt.Errorf("serde: json encode: %s: %w", path, ErrInvalidUTF8)
		}
	}
	return b, nil
}

func (jsonCodec[T]) Decode(b []byte) (T, error) {
	var v T
	if b == nil {
		return v, ErrNull
	}
	if !utf8.Valid(b) {
		return v, fmt.Errorf("serde: json decode: byte %d: %w", validPrefix(b), ErrInvalidUTF8)
	}
	if i := loneSurrogate(b); i >= 0 {
		return v, fmt.Errorf("serde: json decode: byte %d: half a surrogate pair: %w", i, ErrInvalidUTF8)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("serde: json decode: %w", err)
	}
	return v, nil
}
