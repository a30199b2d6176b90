// Package registry holds codecs for values kept behind a Confluent-compatible
// Schema Registry: Avro (github.com/hamba/avro/v2), Protobuf
// (google.golang.org/protobuf) and JSON Schema (encoding/json), in the
// Confluent wire format, through the registry client
// github.com/twmb/franz-go/pkg/sr.
//
// The wire format is a magic byte 0, the schema id as 4 big-endian bytes,
// for Protobuf the message-index array (zig-zag varints; a single 0 for the
// first message of the file), then the Avro binary, Protobuf or JSON
// encoding.
//
// A codec registers (or, with Config.LookupOnly, looks up) its writer schema
// when it is made, so an incompatible schema or a registry that cannot be
// reached stops the program at start. Decode fetches the schema a record
// names by id once and keeps it. Its errors are permanent for the bytes
// (wrong magic byte, an id the registry does not know, a payload that does
// not match its schema: the runtime rejects the record) except those of a
// registry out of reach, which are *serde.UnavailableError: the record is
// not rejected, its transaction aborts and is retried.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/twmb/franz-go/pkg/sr"
)

// Errors a codec's constructor, Encode or Decode wraps. None is retryable.
var (
	// ErrBadMagic: the bytes do not start with the wire format's magic
	// byte 0, or are shorter than its 5-byte header.
	ErrBadMagic = errors.New("registry: not in the Confluent wire format")
	// ErrUnknownSchema: the registry does not know the schema id a record
	// names.
	ErrUnknownSchema = errors.New("registry: schema id unknown to the registry")
	// ErrIncompatible: the registry refused to register a schema as
	// incompatible with the subject's earlier versions.
	ErrIncompatible = errors.New("registry: schema incompatible with the subject's compatibility rules")
	// ErrWrongType: the schema a record names is not of the codec's type
	// (an Avro codec given the id of a Protobuf schema, say).
	ErrWrongType = errors.New("registry: schema of another type")
)

// Config says how to reach the registry.
type Config struct {
	// URL is the registry's base URL (for Apicurio Registry, its
	// Confluent-compatible API: http://host:8080/apis/ccompat/v6 for 2.x,
	// .../v7 for 3.x).
	URL string
	// Timeout bounds each request; 0 means 10s. Decode has no context of
	// its own (serde.Codec), so this bounds a fetch by schema id. A
	// request that runs out of it is an outage (serde.UnavailableError),
	// never the record's fault.
	Timeout time.Duration
	// Username and Password, when set, are sent as HTTP basic auth.
	Username, Password string
	// HTTPClient, when set, is used for the requests (TLS settings).
	HTTPClient *http.Client
}

// Registry is a client of one registry with a cache of the schemas it
// fetched by id. It is safe for concurrent use; codecs made from it share
// its cache.
type Registry struct {
	cl      *sr.Client
	timeout time.Duration

	mu struct {
		sync.Mutex
		byID map[int]sr.Schema
	}
}

// Validate returns every problem of cfg, joined.
func (cfg Config) Validate() error {
	var errs []error
	if cfg.URL == "" {
		errs = append(errs, errors.New("registry: no URL"))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("registry: negative timeout %v", cfg.Timeout))
	}
	if cfg.Password != "" && cfg.Username == "" {
		errs = append(errs, errors.New("registry: a password without a username"))
	}
	return errors.Join(errs...)
}

// New returns a client of the registry at cfg.URL. It makes no request.
func New(cfg Config) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	opts := []sr.ClientOpt{sr.URLs(cfg.URL)}
	if cfg.HTTPClient != nil {
		opts = append(opts, sr.HTTPClient(cfg.HTTPClient))
	}
	if cfg.Username != "" {
		opts = append(opts, sr.BasicAuth(cfg.Username, cfg.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	r := &Registry{cl: cl, timeout: cfg.Timeout}
	r.mu.byID = map[int]sr.Schema{}
	return r, nil
}

// SubjectStrategy names the subject a schema is registered under, as
// Confluent's serializers do.
type SubjectStrategy int

const (
	// TopicName: "<topic>-value" or "<topic>-key" (the default).
	TopicName SubjectStrategy = iota
	// RecordName: the record's fully qualified name (Avro record full
	// name, Protobuf message full name).
	RecordName
	// TopicRecordName: "<topic>-<record full name>".
	TopicRecordName
)

// Subject is where a codec's writer schema is registered.
type Subject struct {
	// Topic the values are written to; needed by TopicName and
	// TopicRecordName.
	Topic string
	// Key is true for a key codec ("-key" rather than "-value").
	Key bool
	// Strategy picks the subject name.
	Strategy SubjectStrategy
}

// name returns the subject name for a record of full name record.
func (s Subject) name(record string) (string, error) {
	switch s.Strategy {
	case TopicName:
		if s.Topic == "" {
			return "", errors.New("registry: the topic name strategy needs Subject.Topic")
		}
		if s.Key {
			return s.Topic + "-key", nil
		}
		return s.Topic + "-value", nil
	case RecordName:
		if record == "" {
			return "", errors.New("registry: the record name strategy needs a named record schema")
		}
		return record, nil
	case TopicRecordName:
		if s.Topic == "" || record == "" {
			return "", errors.New("registry: the topic-record name strategy needs Subject.Topic and a named record schema")
		}
		return s.Topic + "-" + record, nil
	}
	return "", fmt.Errorf("registry: unknown subject strategy %d", s.Strategy)
}

// register registers s under subject (or looks it up when lookupOnly) and
// returns its id.
func (r *Registry) register(ctx context.Context, subject string, s sr.Schema, lookupOnly bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var ss sr.SubjectSchema
	var err error
	if lookupOnly {
		ss, err = r.cl.LookupSchema(ctx, subject, s)
	} else {
		ss, err = r.cl.CreateSchema(ctx, subject, s)
	}
	if err != nil {
		verb := "register"
		if lookupOnly {
			verb = "look up"
		}
		return 0, fmt.Errorf("registry: %s schema under subject %q: %w", verb, subject, classify(err))
	}
	return ss.ID, nil
}

// schema returns the schema of id, from the cache or the registry.
func (r *Registry) schema(id int) (sr.Schema, error) {
	r.mu.Lock()
	s, ok := r.mu.byID[id]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	s, err := r.cl.SchemaByID(ctx, id)
	if err != nil {
		return sr.Schema{}, fmt.Errorf("registry: schema id %d: %w", id, classify(err))
	}
	r.mu.Lock()
	r.mu.byID[id] = s
	r.mu.Unlock()
	return s, nil
}

// classify maps a client error to this package's: the registry's own 404
// (an error body with error code 40403, or a bare 404) is an unknown schema and a 409 an incompatible
// one, both permanent; every other failure (transport, timeout, 5xx, 429,
// an authentication refused, a 404 without the registry's error body: a
// proxy's page, a wrong path) is not the record's doing and is marked as
// an outage.
func classify(err error) error {
	if re, ok := errors.AsType[*sr.ResponseError](err); ok {
		switch re.StatusCode {
		case http.StatusNotFound:
			switch re.ErrorCode {
			case 40403, http.StatusNotFound:
				return fmt.Errorf("%w: %s", ErrUnknownSchema, re.Message)
			case 0:
				return &serde.UnavailableError{Err: fmt.Errorf("registry answered 404 without a registry error body: %s", re.Error())}
			}
			return fmt.Errorf("%s (error code %d)", re.Message, re.ErrorCode)
		case http.StatusConflict:
			return fmt.Errorf("%w: %s", ErrIncompatible, re.Message)
		case http.StatusUnprocessableEntity:
			return fmt.Errorf("invalid schema: %s (error code %d)", re.Message, re.ErrorCode)
		}
		return &serde.UnavailableError{Err: fmt.Errorf("registry answered %d: %s", re.StatusCode, re.Error())}
	}
	return &serde.UnavailableError{Err: err}
}

// header checks the wire format's header of b and returns the schema id
// and the rest.
func header(b []byte) (int, []byte, error) {
	if b == nil {
		return 0, nil, serde.ErrNull
	}
	if len(b) < 5 {
		return 0, nil, fmt.Errorf("registry: %d bytes, shorter than the 5-byte header: %w", len(b), ErrBadMagic)
	}
	if b[0] != 0 {
		return 0, nil, fmt.Errorf("registry: magic byte 0x%02x, want 0x00: %w", b[0], ErrBadMagic)
	}
	var h sr.ConfluentHeader
	id, rest, err := h.DecodeID(b)
	if err != nil {
		return 0, nil, fmt.Errorf("registry: %w", err)
	}
	return id, rest, nil
}
