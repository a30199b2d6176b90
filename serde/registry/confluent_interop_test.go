//go:build confluent

package registry_test

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde/registry"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestConfluentInterop runs Confluent's own serializers
// (testdata/confluent/gen.py, with the python that
// scripts/install-confluent-python.sh installs, named by
// ONCEFLOW_CONFLUENT_PYTHON): what they write today must still be
// golden.txt, and what the Go codecs write must read back in Confluent's
// deserializers to the value.
func TestConfluentInterop(t *testing.T) {
	py := os.Getenv("ONCEFLOW_CONFLUENT_PYTHON")
	if py == "" {
		t.Fatal("ONCEFLOW_CONFLUENT_PYTHON is not set (make test-confluent sets it)")
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(py, append([]string{"testdata/confluent/gen.py"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("gen.py %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	golden, err := os.ReadFile("testdata/confluent/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := run(); got != string(golden) {
		t.Errorf("Confluent's serializers now write\n%s\ngolden.txt has\n%s", got, golden)
	}

	fake, r := newRegistry(t)
	ctx := context.Background()
	fake.SeedSchema("payments-value", 1, 1, sr.Schema{Schema: paymentSchema})
	fake.SeedSchema("ts-value", 1, 2, sr.Schema{Schema: `syntax = "proto3";`, Type: sr.TypeProtobuf})
	fake.SeedSchema("ranges-value", 1, 3, sr.Schema{Schema: `syntax = "proto2";`, Type: sr.TypeProtobuf})
	fake.SeedSchema("payments-json-value", 1, 4, sr.Schema{Schema: paymentJSONSchema, Type: sr.TypeJSON})
	js, err := registry.JSONSchema[jsonPayment](ctx, r, registry.JSONSchemaConfig{Schema: paymentJSONSchema, Subject: registry.Subject{Topic: "payments-json"}})
	if err != nil {
		t.Fatal(err)
	}
	avro := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: "payments"})
	ts, err := registry.Protobuf[*timestamppb.Timestamp](ctx, r, registry.ProtobufConfig{Schema: `syntax = "proto3";`, Subject: registry.Subject{Topic: "ts"}})
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := registry.Protobuf[*descriptorpb.DescriptorProto_ExtensionRange](ctx, r, registry.ProtobufConfig{Schema: `syntax = "proto2";`, Subject: registry.Subject{Topic: "ranges"}})
	if err != nil {
		t.Fatal(err)
	}
	start := int32(41)
	for _, tc := range []struct {
		name string
		enc  func() ([]byte, error)
		want string
	}{
		{"avro-payment", func() ([]byte, error) { return avro.Encode(payment{ID: "zé", Amount: -7}) }, "zé -7"},
		{"protobuf-timestamp", func() ([]byte, error) { return ts.Encode(&timestamppb.Timestamp{Seconds: 1700000000, Nanos: 5}) }, "1700000000 5"},
		{"protobuf-extension-range", func() ([]byte, error) {
			return ranges.Encode(&descriptorpb.DescriptorProto_ExtensionRange{Start: &start})
		}, "41"},
		{"json-payment", func() ([]byte, error) { return js.Encode(jsonPayment{ID: "zé", Amount: -7}) }, "zé -7"},
	} {
		b, err := tc.enc()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := strings.TrimSpace(run("decode", tc.name, hex.EncodeToString(b))); got != tc.want {
			t.Errorf("%s: Confluent's deserializer read % x as %q, want %q", tc.name, b, got, tc.want)
		}
	}
}
