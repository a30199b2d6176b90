// Package serde holds the codecs that turn Kafka record keys and values into
// Go values and back.
//
// A Codec is stateless and safe for concurrent use. Decode errors are
// permanent for the bytes given: the runtime sends a record it cannot decode
// to the application's rejected-records topic and goes on.
package serde

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
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
	if b == nil {
		return 0, ErrNull
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("serde: int64 needs 8 bytes, got %d", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// JSON encodes T with encoding/json. Decoding rejects a Kafka null, trailing
// data and malformed documents.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Name() string { return "json" }

func (jsonCodec[T]) Encode(v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("serde: json encode: %w", err)
	}
	return b, nil
}

func (jsonCodec[T]) Decode(b []byte) (T, error) {
	var v T
	if b == nil {
		return v, ErrNull
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("serde: json decode: %w", err)
	}
	return v, nil
}
