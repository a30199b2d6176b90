package registry

import (
	"context"
	"fmt"
	"slices"

	"github.com/onceflow/onceflow/serde"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ProtobufConfig is a Protobuf codec's schema and subject.
type ProtobufConfig struct {
	// Schema is the text of the .proto file that declares the message,
	// as the registry stores it.
	Schema string
	// Subject picks the subject the schema is registered under.
	Subject Subject
	// LookupOnly looks the schema up instead of registering it.
	LookupOnly bool
}

// Protobuf returns a codec of the generated message type T (a pointer,
// such as *pb.Payment) that registers cfg.Schema with r. Encode writes the
// message-index array of T's place in its file. Decode checks that the id a
// record names is a Protobuf schema the registry knows and that the index
// array is well formed, then decodes the payload as T, as Confluent's
// deserializer does with a specific type: a field unknown to T is kept as
// an unknown field, not an error.
func Protobuf[T proto.Message](ctx context.Context, r *Registry, cfg ProtobufConfig) (serde.Codec[T], error) {
	var zero T
	md := zero.ProtoReflect().Descriptor()
	subject, err := cfg.Subject.name(string(md.FullName()))
	if err != nil {
		return nil, err
	}
	id, err := r.register(ctx, subject, sr.Schema{Schema: cfg.Schema, Type: sr.TypeProtobuf}, cfg.LookupOnly)
	if err != nil {
		return nil, err
	}
	return &protoCodec[T]{r: r, id: id, index: messageIndex(md), typ: zero.ProtoReflect().Type()}, nil
}

// messageIndex is the path of md in its file: the index of its top-level
// message, then of each nested message down to md.
func messageIndex(md protoreflect.MessageDescriptor) []int {
	var index []int
	for d := protoreflect.Descriptor(md); ; d = d.Parent() {
		if _, ok := d.(protoreflect.MessageDescriptor); !ok {
			break
		}
		index = append(index, d.Index())
	}
	slices.Reverse(index)
	return index
}

type protoCodec[T proto.Message] struct {
	r     *Registry
	id    int
	index []int
	typ   protoreflect.MessageType
}

func (c *protoCodec[T]) Name() string { return "protobuf" }

func (c *protoCodec[T]) Encode(v T) ([]byte, error) {
	var h sr.ConfluentHeader
	b, _ := h.AppendEncode(make([]byte, 0, 64), c.id, c.index)
	b, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, v)
	if err != nil {
		return nil, fmt.Errorf("registry: protobuf encode: %w", err)
	}
	return b, nil
}

func (c *protoCodec[T]) Decode(b []byte) (T, error) {
	var zero T
	id, rest, err := header(b)
	if err != nil {
		return zero, err
	}
	var h sr.ConfluentHeader
	index, body, err := h.DecodeIndex(rest, 64)
	if err != nil {
		return zero, fmt.Errorf("registry: protobuf message index (schema id %d): %w: %w", id, ErrBadMagic, err)
	}
	if id == c.id && !slices.Equal(index, c.index) {
		return zero, fmt.Errorf("registry: schema id %d message index %v names another message than the codec's (%v): %w", id, index, c.index, ErrWrongType)
	}
	if id != c.id {
		ws, err := c.r.schema(id)
		if err != nil {
			return zero, err
		}
		if ws.Type != sr.TypeProtobuf {
			return zero, fmt.Errorf("registry: schema id %d is %s: %w", id, ws.Type, ErrWrongType)
		}
	}
	m := c.typ.New().Interface()
	if err := proto.Unmarshal(body, m); err != nil {
		return zero, fmt.Errorf("registry: protobuf decode (schema id %d): %w", id, err)
	}
	return m.(T), nil
}
