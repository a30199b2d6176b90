package registry_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/serde/registry"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The tests run against srfake, franz-go's in-memory registry (a test
// double serving the Confluent API), with interceptors for the answers it
// does not give by itself (a refused incompatible schema, an outage).

type payment struct {
	ID     string `avro:"id"`
	Amount int64  `avro:"amount"`
}

type paymentV2 struct {
	ID       string `avro:"id"`
	Amount   int64  `avro:"amount"`
	Currency string `avro:"currency"`
}

const paymentSchema = `{"type":"record","name":"Payment","namespace":"shop","fields":[
	{"name":"id","type":"string"},{"name":"amount","type":"long"}]}`

const paymentSchemaV2 = `{"type":"record","name":"Payment","namespace":"shop","fields":[
	{"name":"id","type":"string"},{"name":"amount","type":"long"},
	{"name":"currency","type":"string","default":"EUR"}]}`

type jsonPayment struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

const paymentJSONSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Payment","type":"object",` +
	`"properties":{"id":{"type":"string"},"amount":{"type":"integer"}},"required":["id","amount"]}`

func newRegistry(t *testing.T) (*srfake.Registry, *registry.Registry) {
	t.Helper()
	fake := srfake.New()
	t.Cleanup(fake.Close)
	r, err := registry.New(registry.Config{URL: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return fake, r
}

func avroCodec[T any](t *testing.T, r *registry.Registry, schema string, sub registry.Subject) serde.Codec[T] {
	t.Helper()
	c, err := registry.Avro[T](context.Background(), r, registry.AvroConfig{Schema: schema, Subject: sub})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The Avro wire form, checked by hand: magic 0, id 1 big-endian, then the
// Avro binary encoding: "a1" as zig-zag length 2 (0x04) and its bytes,
// 150 as the zig-zag varint of 300 (0xac 0x02).
func TestAvroWireFormat(t *testing.T) {
	fake, r := newRegistry(t)
	fake.SeedSchema("payments-value", 1, 1, sr.Schema{Schema: paymentSchema})
	c := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: "payments"})
	b, err := c.Encode(payment{ID: "a1", Amount: 150})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hex.DecodeString("0000000001" + "046131" + "ac02")
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded % x, want % x", b, want)
	}
	got, err := c.Decode(want)
	if err != nil || got != (payment{ID: "a1", Amount: 150}) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}

// The Protobuf wire form, checked by hand: after the id, the message-index
// array as zig-zag varints, a single 0 for the file's first message, else
// its length and each index; then the message's own encoding.
func TestProtobufWireFormat(t *testing.T) {
	fake, r := newRegistry(t)
	fake.SeedSchema("ts-value", 1, 7, sr.Schema{Schema: "syntax = \"proto3\";", Type: sr.TypeProtobuf})
	c, err := registry.Protobuf[*timestamppb.Timestamp](context.Background(), r,
		registry.ProtobufConfig{Schema: "syntax = \"proto3\";", Subject: registry.Subject{Topic: "ts"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode(&timestamppb.Timestamp{Seconds: 1, Nanos: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Timestamp is descriptor index [0]: the shortcut 0x00; seconds is
	// field 1 varint (0x08 0x01), nanos field 2 varint (0x10 0x02).
	if want, _ := hex.DecodeString("0000000007" + "00" + "08011002"); !bytes.Equal(b, want) {
		t.Fatalf("encoded % x, want % x", b, want)
	}
	got, err := c.Decode(b)
	if err != nil || got.GetSeconds() != 1 || got.GetNanos() != 2 {
		t.Fatalf("decoded %v, %v", got, err)
	}

	// DescriptorProto.ExtensionRange is nested message 0 of top-level
	// message 2 of descriptor.proto: the array [2, 0] is 0x04 0x04 0x00.
	nested, err := registry.Protobuf[*descriptorpb.DescriptorProto_ExtensionRange](context.Background(), r,
		registry.ProtobufConfig{Schema: "syntax = \"proto2\";", Subject: registry.Subject{Topic: "ranges"}})
	if err != nil {
		t.Fatal(err)
	}
	start := int32(3)
	b, err = nested.Encode(&descriptorpb.DescriptorProto_ExtensionRange{Start: &start})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[5:8], []byte{0x04, 0x04, 0x00}) || !bytes.Equal(b[8:], []byte{0x08, 0x03}) {
		t.Fatalf("encoded % x, want index 04 04 00 and body 08 03", b)
	}
	if got, err := nested.Decode(b); err != nil || got.GetStart() != 3 {
		t.Fatalf("decoded %v, %v", got, err)
	}
	// The codec's own id with another message's index is refused.
	b[6] = 0x02
	if _, err := nested.Decode(b); !errors.Is(err, registry.ErrWrongType) {
		t.Fatalf("decode with index [1, 0]: %v, want ErrWrongType", err)
	}
}

// Each subject name strategy registers where Confluent's serializers do.
func TestSubjectNameStrategies(t *testing.T) {
	fake, r := newRegistry(t)
	for _, tc := range []struct {
		sub  registry.Subject
		want string
	}{
		{registry.Subject{Topic: "orders"}, "orders-value"},
		{registry.Subject{Topic: "orders", Key: true}, "orders-key"},
		{registry.Subject{Strategy: registry.RecordName}, "shop.Payment"},
		{registry.Subject{Topic: "orders", Strategy: registry.TopicRecordName}, "orders-shop.Payment"},
	} {
		avroCodec[payment](t, r, paymentSchema, tc.sub)
		if !fake.SubjectExists(tc.want) {
			t.Errorf("%+v: no subject %q", tc.sub, tc.want)
		}
	}
	if _, err := registry.Avro[payment](context.Background(), r, registry.AvroConfig{Schema: paymentSchema}); err == nil || !strings.Contains(err.Error(), "Subject.Topic") {
		t.Errorf("topic strategy without a topic: %v", err)
	}
	_, err := registry.Avro[string](context.Background(), r, registry.AvroConfig{Schema: `"string"`, Subject: registry.Subject{Strategy: registry.RecordName}})
	if err == nil || !strings.Contains(err.Error(), "named record") {
		t.Errorf("record strategy for an unnamed schema: %v", err)
	}
}

// A record written with an older schema version reads into the codec's
// newer one by Avro's resolution rules (the added field's default).
func TestAvroSchemaEvolution(t *testing.T) {
	_, r := newRegistry(t)
	v1 := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: "p"})
	v2 := avroCodec[paymentV2](t, r, paymentSchemaV2, registry.Subject{Topic: "p"})
	b, err := v1.Encode(payment{ID: "x", Amount: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v2.Decode(b)
	if err != nil || got != (paymentV2{ID: "x", Amount: 3, Currency: "EUR"}) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}

// What the bytes are at fault for is permanent (the runtime rejects the
// record); what the registry is at fault for is an outage (it does not).
func TestDecodeErrorsPermanentOrUnavailable(t *testing.T) {
	fake, r := newRegistry(t)
	c := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: "p"})
	good, err := c.Encode(payment{ID: "a", Amount: 1})
	if err != nil {
		t.Fatal(err)
	}
	permanent := func(name string, b []byte, target error) {
		t.Helper()
		_, err := c.Decode(b)
		if !errors.Is(err, target) || serde.IsUnavailable(err) {
			t.Errorf("%s: %v, want %v and not unavailable", name, err, target)
		}
	}
	permanent("wrong magic byte", append([]byte{1}, good[1:]...), registry.ErrBadMagic)
	permanent("short", []byte{0, 0, 1}, registry.ErrBadMagic)
	permanent("null", nil, serde.ErrNull)
	permanent("unknown id", append([]byte{0, 0, 0, 0x30, 0x39}, good[5:]...), registry.ErrUnknownSchema)

	protoID, _, err := fake.RegisterSchema("other", sr.Schema{Schema: `syntax = "proto3";`, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	permanent("protobuf id", append([]byte{0, 0, 0, 0, byte(protoID)}, good[5:]...), registry.ErrWrongType)
	if _, err := c.Decode(append(good[:5:5], 0x04)); err == nil || serde.IsUnavailable(err) {
		t.Errorf("truncated body: %v, want a permanent error", err)
	}

	// A schema id not cached yet while the registry answers 503, then
	// while it is gone: both outages, neither the record's fault.
	v2id, _, err := fake.RegisterSchema("p2", sr.Schema{Schema: paymentSchemaV2})
	if err != nil {
		t.Fatal(err)
	}
	fromV2 := append([]byte{0, 0, 0, 0, byte(v2id)}, good[5:]...)
	var down atomic.Bool
	down.Store(true)
	fake.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
		if !down.Load() {
			return false
		}
		http.Error(w, `{"error_code":50003,"message":"backend unavailable"}`, http.StatusServiceUnavailable)
		return true
	})
	if _, err := c.Decode(fromV2); !serde.IsUnavailable(err) || !strings.Contains(err.Error(), "503") {
		t.Errorf("registry answering 503: %v, want unavailable", err)
	}
	// Cached schemas need no registry.
	if _, err := c.Decode(good); err != nil {
		t.Errorf("own schema while the registry is down: %v", err)
	}
	down.Store(false)
	fake.Close()
	if _, err := c.Decode(fromV2); !serde.IsUnavailable(err) {
		t.Errorf("registry gone: %v, want unavailable", err)
	}
}

// A schema the registry refuses as incompatible fails the codec's
// construction with ErrIncompatible and the registry's message; a
// registry out of reach fails it as an outage.
func TestRegistrationErrors(t *testing.T) {
	fake, r := newRegistry(t)
	fake.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodPost || !strings.HasPrefix(req.URL.Path, "/subjects/strict-value") {
			return false
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema for subject \"strict-value\""}`))
		return true
	})
	_, err := registry.Avro[payment](context.Background(), r, registry.AvroConfig{Schema: paymentSchema, Subject: registry.Subject{Topic: "strict"}})
	if !errors.Is(err, registry.ErrIncompatible) || serde.IsUnavailable(err) || !strings.Contains(err.Error(), `subject "strict-value"`) {
		t.Errorf("incompatible schema: %v", err)
	}
	_, err = registry.Avro[payment](context.Background(), r, registry.AvroConfig{Schema: paymentSchema, Subject: registry.Subject{Topic: "absent"}, LookupOnly: true})
	if err == nil || serde.IsUnavailable(err) {
		t.Errorf("lookup of an unregistered schema: %v, want a permanent error", err)
	}
	fake.Close()
	_, err = registry.Avro[payment](context.Background(), r, registry.AvroConfig{Schema: paymentSchema, Subject: registry.Subject{Topic: "p"}})
	if !serde.IsUnavailable(err) {
		t.Errorf("registry gone: %v, want unavailable", err)
	}
}

// Bytes written by Confluent's own serializers (testdata/confluent/gen.py,
// confluent-kafka-python with its in-memory registry) are what the codecs
// write for the same value and schema id, and decode to that value.
func TestConfluentSerializerBytes(t *testing.T) {
	golden, err := os.ReadFile("testdata/confluent/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	cases := 0
	for line := range strings.Lines(string(golden)) {
		var name, hexBytes string
		var id int
		if _, err := fmt.Sscan(line, &name, &id, &hexBytes); err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		want, err := hex.DecodeString(hexBytes)
		if err != nil {
			t.Fatal(err)
		}
		fake, r := newRegistry(t)
		ctx := context.Background()
		var got []byte
		var back string
		switch name {
		case "avro-payment":
			fake.SeedSchema("payments-value", 1, id, sr.Schema{Schema: paymentSchema})
			c := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: "payments"})
			got, err = c.Encode(payment{ID: "a1", Amount: 150})
			v, derr := c.Decode(want)
			back = fmt.Sprintf("%+v %v", v, derr)
		case "protobuf-timestamp":
			fake.SeedSchema("ts-value", 1, id, sr.Schema{Schema: `syntax = "proto3";`, Type: sr.TypeProtobuf})
			c, cerr := registry.Protobuf[*timestamppb.Timestamp](ctx, r, registry.ProtobufConfig{Schema: `syntax = "proto3";`, Subject: registry.Subject{Topic: "ts"}})
			if cerr != nil {
				t.Fatal(cerr)
			}
			got, err = c.Encode(&timestamppb.Timestamp{Seconds: 1, Nanos: 2})
			v, derr := c.Decode(want)
			back = fmt.Sprintf("%d/%d %v", v.GetSeconds(), v.GetNanos(), derr)
		case "protobuf-extension-range":
			fake.SeedSchema("ranges-value", 1, id, sr.Schema{Schema: `syntax = "proto2";`, Type: sr.TypeProtobuf})
			c, cerr := registry.Protobuf[*descriptorpb.DescriptorProto_ExtensionRange](ctx, r, registry.ProtobufConfig{Schema: `syntax = "proto2";`, Subject: registry.Subject{Topic: "ranges"}})
			if cerr != nil {
				t.Fatal(cerr)
			}
			start := int32(3)
			got, err = c.Encode(&descriptorpb.DescriptorProto_ExtensionRange{Start: &start})
			v, derr := c.Decode(want)
			back = fmt.Sprintf("%d %v", v.GetStart(), derr)
		case "json-payment":
			fake.SeedSchema("payments-json-value", 1, id, sr.Schema{Schema: paymentJSONSchema, Type: sr.TypeJSON})
			c, cerr := registry.JSONSchema[jsonPayment](ctx, r, registry.JSONSchemaConfig{Schema: paymentJSONSchema, Subject: registry.Subject{Topic: "payments-json"}})
			if cerr != nil {
				t.Fatal(cerr)
			}
			got, err = c.Encode(jsonPayment{ID: "a1", Amount: 150})
			v, derr := c.Decode(want)
			back = fmt.Sprintf("%+v %v", v, derr)
		default:
			t.Fatalf("golden case %q has no test", name)
		}
		cases++
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: encoded % x (%v), Confluent wrote % x", name, got, err, want)
		}
		if wantBack := map[string]string{"avro-payment": "{ID:a1 Amount:150} <nil>", "protobuf-timestamp": "1/2 <nil>", "protobuf-extension-range": "3 <nil>", "json-payment": "{ID:a1 Amount:150} <nil>"}[name]; back != wantBack {
			t.Errorf("%s: decoded Confluent's bytes to %s, want %s", name, back, wantBack)
		}
	}
	if cases != 4 {
		t.Errorf("%d golden cases, want 4", cases)
	}
}

// Validate names every problem of a Config at once.
func TestConfigValidate(t *testing.T) {
	err := registry.Config{Timeout: -1, Password: "p"}.Validate()
	for _, want := range []string{"no URL", "negative timeout", "password without a username"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to name %q", err, want)
		}
	}
	if _, err := registry.New(registry.Config{}); err == nil {
		t.Error("New with no URL: no error")
	}
	if err := (registry.Config{URL: "http://127.0.0.1:1"}).Validate(); err != nil {
		t.Errorf("Validate of a URL alone: %v", err)
	}
}

// JSON Schema: JSON after the 5-byte header, the schema's title as the
// record name, an id of another schema type refused, JSON's own rules
// (UTF-8) kept.
func TestJSONSchema(t *testing.T) {
	fake, r := newRegistry(t)
	ctx := context.Background()
	c, err := registry.JSONSchema[jsonPayment](ctx, r, registry.JSONSchemaConfig{Schema: paymentJSONSchema, Subject: registry.Subject{Topic: "orders", Strategy: registry.TopicRecordName}})
	if err != nil {
		t.Fatal(err)
	}
	if !fake.SubjectExists("orders-Payment") {
		t.Error("no subject orders-Payment")
	}
	b, err := c.Encode(jsonPayment{ID: "x", Amount: 2})
	if err != nil || string(b[5:]) != `{"id":"x","amount":2}` || b[0] != 0 {
		t.Fatalf("encoded %q, %v", b, err)
	}
	if got, err := c.Decode(b); err != nil || got != (jsonPayment{ID: "x", Amount: 2}) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	avroID, _, err := fake.RegisterSchema("avro", sr.Schema{Schema: paymentSchema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(append([]byte{0, 0, 0, 0, byte(avroID)}, b[5:]...)); !errors.Is(err, registry.ErrWrongType) {
		t.Errorf("avro id: %v, want ErrWrongType", err)
	}
	if _, err := c.Decode(append(b[:5:5], 0xff)); !errors.Is(err, serde.ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: %v, want ErrInvalidUTF8", err)
	}
	if _, err := registry.JSONSchema[jsonPayment](ctx, r, registry.JSONSchemaConfig{Schema: `{"type":`, Subject: registry.Subject{Topic: "o"}}); err == nil {
		t.Error("a schema that is not JSON: no error")
	}
}
