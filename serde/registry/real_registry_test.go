//go:build registry

package registry_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/serde/registry"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The codecs against a real registry: the Apicurio Registry that
// scripts/apicurio.sh starts (its Confluent-compatible API), named by
// ONCEFLOW_REGISTRY_URL. Subjects are named uniquely per run.

const timestampProto = `syntax = "proto3";
package google.protobuf;

message Timestamp {
  int64 seconds = 1;
  int32 nanos = 2;
}
`

func realRegistry(t *testing.T) (*registry.Registry, string) {
	t.Helper()
	url := os.Getenv("ONCEFLOW_REGISTRY_URL")
	if url == "" {
		t.Fatal("ONCEFLOW_REGISTRY_URL is not set (make test-registry sets it)")
	}
	r, err := registry.New(registry.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return r, t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// Avro round-trips through the registry, a record of an older schema
// version reads into a newer one, and each subject strategy registers
// where it should.
func TestRealRegistryAvro(t *testing.T) {
	r, topic := realRegistry(t)
	ctx := context.Background()
	v1 := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: topic})
	b, err := v1.Encode(payment{ID: "a1", Amount: 150})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || len(b) != 10 {
		t.Fatalf("encoded % x, want magic 0, a 4-byte id and 5 bytes of Avro", b)
	}
	if got, err := v1.Decode(b); err != nil || got != (payment{ID: "a1", Amount: 150}) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	v2 := avroCodec[paymentV2](t, r, paymentSchemaV2, registry.Subject{Topic: topic})
	if got, err := v2.Decode(b); err != nil || got != (paymentV2{ID: "a1", Amount: 150, Currency: "EUR"}) {
		t.Fatalf("v1 bytes decoded by v2: %+v, %v", got, err)
	}
	// A second codec of the same schema gets the same id.
	again := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: topic})
	b2, err := again.Encode(payment{ID: "a1", Amount: 150})
	if err != nil || string(b2) != string(b) {
		t.Fatalf("second codec wrote % x (%v), first % x", b2, err, b)
	}

	cl, err := sr.NewClient(sr.URLs(os.Getenv("ONCEFLOW_REGISTRY_URL")))
	if err != nil {
		t.Fatal(err)
	}
	avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: topic, Strategy: registry.TopicRecordName})
	subjects, err := cl.Subjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{topic + "-value": false, topic + "-shop.Payment": false}
	for _, s := range subjects {
		if _, ok := want[s]; ok {
			want[s] = true
		}
	}
	for s, ok := range want {
		if !ok {
			t.Errorf("subject %q not in the registry (%d subjects)", s, len(subjects))
		}
	}
}

// Protobuf round-trips through the registry, which parses the schema.
func TestRealRegistryProtobuf(t *testing.T) {
	r, topic := realRegistry(t)
	c, err := registry.Protobuf[*timestamppb.Timestamp](context.Background(), r, registry.ProtobufConfig{Schema: timestampProto, Subject: registry.Subject{Topic: topic}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode(&timestamppb.Timestamp{Seconds: 1700000000, Nanos: 5})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || b[5] != 0 {
		t.Fatalf("encoded % x, want magic 0 and the index shortcut 0 after the id", b)
	}
	if got, err := c.Decode(b); err != nil || got.GetSeconds() != 1700000000 || got.GetNanos() != 5 {
		t.Fatalf("decoded %v, %v", got, err)
	}
}

// JSON Schema round-trips through the registry.
func TestRealRegistryJSONSchema(t *testing.T) {
	r, topic := realRegistry(t)
	c, err := registry.JSONSchema[jsonPayment](context.Background(), r, registry.JSONSchemaConfig{Schema: paymentJSONSchema, Subject: registry.Subject{Topic: topic}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode(jsonPayment{ID: "j", Amount: 9})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Decode(b); err != nil || got != (jsonPayment{ID: "j", Amount: 9}) {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}

// The registry's own answers classified: an id it does not know is the
// record's fault; a schema its compatibility rule refuses fails the
// codec with ErrIncompatible.
func TestRealRegistryErrors(t *testing.T) {
	r, topic := realRegistry(t)
	ctx := context.Background()
	c := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: topic})
	_, err := c.Decode([]byte{0, 0x7f, 0xff, 0xff, 0xf0, 0x02, 0x61, 0x02})
	if !errors.Is(err, registry.ErrUnknownSchema) || serde.IsUnavailable(err) {
		t.Errorf("unknown id: %v, want ErrUnknownSchema", err)
	}

	cl, err := sr.NewClient(sr.URLs(os.Getenv("ONCEFLOW_REGISTRY_URL")))
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, topic+"-value") {
		if res.Err != nil {
			t.Fatalf("set compatibility: %v", res.Err)
		}
	}
	// amount from long to string: not backward compatible.
	bad := `{"type":"record","name":"Payment","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"amount","type":"string"}]}`
	_, err = registry.Avro[map[string]any](ctx, r, registry.AvroConfig{Schema: bad, Subject: registry.Subject{Topic: topic}})
	if !errors.Is(err, registry.ErrIncompatible) || serde.IsUnavailable(err) {
		t.Errorf("incompatible schema: %v, want ErrIncompatible", err)
	}
	t.Logf("incompatible: %v", err)
}
