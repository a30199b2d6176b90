package registry

import (
	"context"
	"fmt"

	"github.com/onceflow/onceflow/serde"
	"github.com/twmb/franz-go/pkg/sr"
)

// JSONSchemaConfig is a JSON Schema codec's schema and subject.
type JSONSchemaConfig struct {
	// Schema is the JSON Schema document, as the registry stores it.
	Schema string
	// Subject picks the subject the schema is registered under. The
	// record strategies use the schema's "title" as the record name, as
	// Confluent's serializer does.
	Subject Subject
	// LookupOnly looks the schema up instead of registering it.
	LookupOnly bool
}

// JSONSchema returns a codec of T as JSON (serde.JSON's rules: UTF-8 only,
// no trailing data) in the Confluent wire format, with cfg.Schema
// registered with r. Like Confluent's serializer by default, it does not
// validate values against the schema: the registry's compatibility rules
// govern the schema, encoding/json the values. Decode checks that the id a
// record names is a JSON Schema the registry knows.
func JSONSchema[T any](ctx context.Context, r *Registry, cfg JSONSchemaConfig) (serde.Codec[T], error) {
	doc, err := serde.JSON[map[string]any]().Decode([]byte(cfg.Schema))
	if err != nil {
		return nil, fmt.Errorf("registry: json schema: %w", err)
	}
	title, _ := doc["title"].(string)
	subject, err := cfg.Subject.name(title)
	if err != nil {
		return nil, err
	}
	id, err := r.register(ctx, subject, sr.Schema{Schema: cfg.Schema, Type: sr.TypeJSON}, cfg.LookupOnly)
	if err != nil {
		return nil, err
	}
	return &jsonSchemaCodec[T]{r: r, id: id, json: serde.JSON[T]()}, nil
}

type jsonSchemaCodec[T any] struct {
	r    *Registry
	id   int
	json serde.Codec[T]
}

func (c *jsonSchemaCodec[T]) Name() string { return "json-schema" }

func (c *jsonSchemaCodec[T]) Encode(v T) ([]byte, error) {
	body, err := c.json.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var h sr.ConfluentHeader
	b, _ := h.AppendEncode(make([]byte, 0, 5+len(body)), c.id, nil)
	return append(b, body...), nil
}

func (c *jsonSchemaCodec[T]) Decode(b []byte) (T, error) {
	var zero T
	id, body, err := header(b)
	if err != nil {
		return zero, err
	}
	if id != c.id {
		ws, err := c.r.schema(id)
		if err != nil {
			return zero, err
		}
		if ws.Type != sr.TypeJSON {
			return zero, fmt.Errorf("registry: schema id %d is %s: %w", id, ws.Type, ErrWrongType)
		}
	}
	v, err := c.json.Decode(body)
	if err != nil {
		return zero, fmt.Errorf("registry: schema id %d: %w", id, err)
	}
	return v, nil
}
