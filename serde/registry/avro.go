package registry

import (
	"context"
	"fmt"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/onceflow/onceflow/serde"
	"github.com/twmb/franz-go/pkg/sr"
)

// AvroConfig is an Avro codec's schema and subject.
type AvroConfig struct {
	// Schema is the Avro schema (JSON) the codec writes with and reads
	// into: records written with another version of it are resolved to it
	// by Avro's schema resolution rules.
	Schema string
	// Subject picks the subject the schema is registered under.
	Subject Subject
	// LookupOnly looks the schema up instead of registering it, for
	// registries where only a deployment pipeline may register.
	LookupOnly bool
}

// Avro returns a codec of T (a struct with `avro` field tags, a map, or a
// basic type matching the schema) that registers cfg.Schema with r. The
// context bounds the registration.
func Avro[T any](ctx context.Context, r *Registry, cfg AvroConfig) (serde.Codec[T], error) {
	schema, err := avro.ParseWithCache(cfg.Schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("registry: avro schema: %w", err)
	}
	var record string
	if n, ok := schema.(avro.NamedSchema); ok {
		record = n.FullName()
	}
	subject, err := cfg.Subject.name(record)
	if err != nil {
		return nil, err
	}
	id, err := r.register(ctx, subject, sr.Schema{Schema: cfg.Schema, Type: sr.TypeAvro}, cfg.LookupOnly)
	if err != nil {
		return nil, err
	}
	c := &avroCodec[T]{r: r, schema: schema, id: id}
	c.mu.resolved = map[int]avro.Schema{id: schema}
	return c, nil
}

type avroCodec[T any] struct {
	r      *Registry
	schema avro.Schema
	id     int

	mu struct {
		sync.Mutex
		resolved map[int]avro.Schema // writer id to the schema to read it with
	}
}

func (c *avroCodec[T]) Name() string { return "avro" }

func (c *avroCodec[T]) Encode(v T) ([]byte, error) {
	var h sr.ConfluentHeader
	b, _ := h.AppendEncode(make([]byte, 0, 64), c.id, nil)
	body, err := avro.Marshal(c.schema, v)
	if err != nil {
		return nil, fmt.Errorf("registry: avro encode: %w", err)
	}
	return append(b, body...), nil
}

func (c *avroCodec[T]) Decode(b []byte) (T, error) {
	var v T
	id, body, err := header(b)
	if err != nil {
		return v, err
	}
	reader, err := c.reader(id)
	if err != nil {
		return v, err
	}
	if err := avro.Unmarshal(reader, body, &v); err != nil {
		return v, fmt.Errorf("registry: avro decode (schema id %d): %w", id, err)
	}
	return v, nil
}

// reader returns the schema that reads what schema id wrote into the
// codec's own schema.
func (c *avroCodec[T]) reader(id int) (avro.Schema, error) {
	c.mu.Lock()
	s, ok := c.mu.resolved[id]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	ws, err := c.r.schema(id)
	if err != nil {
		return nil, err
	}
	if ws.Type != sr.TypeAvro {
		return nil, fmt.Errorf("registry: schema id %d is %s: %w", id, ws.Type, ErrWrongType)
	}
	writer, err := avro.ParseWithCache(ws.Schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("registry: schema id %d: avro schema: %w", id, err)
	}
	s, err = avro.NewSchemaCompatibility().Resolve(c.schema, writer)
	if err != nil {
		return nil, fmt.Errorf("registry: schema id %d cannot be read as the codec's schema: %w", id, err)
	}
	c.mu.Lock()
	c.mu.resolved[id] = s
	c.mu.Unlock()
	return s, nil
}
