package engine_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/serde/registry"
	"github.com/onceflow/onceflow/topology"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type avroPayment struct {
	ID     string `avro:"id"`
	Amount int64  `avro:"amount"`
}

type avroPaymentV2 struct {
	ID       string `avro:"id"`
	Amount   int64  `avro:"amount"`
	Currency string `avro:"currency"`
}

const (
	avroPaymentSchema = `{"type":"record","name":"Payment","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"amount","type":"long"}]}`
	avroPaymentSchemaV2 = `{"type":"record","name":"Payment","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"amount","type":"long"},
		{"name":"currency","type":"string","default":"EUR"}]}`
	// The start of google/protobuf/wrappers.proto: Int64Value is its
	// third message, index [2].
	wrappersProto = `syntax = "proto3";
package google.protobuf;
message DoubleValue { double value = 1; }
message FloatValue { float value = 1; }
message Int64Value { int64 value = 1; }
`
)

// A topology reads Avro payments (written with two versions of their
// schema) through a schema registry and writes each amount doubled as a
// Protobuf Int64Value. A record in another format is rejected as
// undecodable; the registry answering 503 while the newer schema is first
// fetched aborts transactions and rejects nothing; every payment has its
// output once.
func TestAvroInProtobufOutThroughARegistry(t *testing.T) {
	fake := srfake.New()
	defer fake.Close()
	var outages atomic.Int64 // armed once the codecs are made
	fake.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
		if !strings.HasPrefix(req.URL.Path, "/schemas/ids/") || outages.Load() <= 0 {
			return false
		}
		outages.Add(-1)
		http.Error(w, `{"error_code":50003,"message":"backend unavailable"}`, http.StatusServiceUnavailable)
		return true
	})
	ctx := context.Background()
	reg, err := registry.New(registry.Config{URL: fake.URL(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	env := enginetest.New(t)
	in, out, app := env.Name("payments"), env.Name("doubled"), env.Name("app")
	env.CreateTopic(in, 1)
	inCodec, err := registry.Avro[avroPayment](ctx, reg, registry.AvroConfig{Schema: avroPaymentSchema, Subject: registry.Subject{Topic: in}})
	if err != nil {
		t.Fatal(err)
	}
	outCodec, err := registry.Protobuf[*wrapperspb.Int64Value](ctx, reg, registry.ProtobufConfig{Schema: wrappersProto, Subject: registry.Subject{Topic: out}})
	if err != nil {
		t.Fatal(err)
	}
	tp := topology.New("doubler")
	src := topology.Source(tp, in, serde.String(), inCodec)
	doubled := topology.Map(src, func(_ string, p avroPayment) (string, *wrapperspb.Int64Value, error) {
		return p.ID, wrapperspb.Int64(2 * p.Amount), nil
	})
	topology.To(doubled, out, serde.String(), outCodec)

	// A producer of its own with the newer schema, its id unknown to the
	// topology's codec until a record names it.
	v2, err := registry.Avro[avroPaymentV2](ctx, reg, registry.AvroConfig{Schema: avroPaymentSchemaV2, Subject: registry.Subject{Topic: in}})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []avroPayment{{"p1", 10}, {"p2", 20}} {
		b, err := inCodec.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		env.ProduceRaw(in, []byte(p.ID), b)
		if i == 0 {
			env.ProduceRaw(in, []byte("json"), []byte(`{"id":"p9","amount":1}`))
		}
	}
	b, err := v2.Encode(avroPaymentV2{ID: "p3", Amount: 30, Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	env.ProduceRaw(in, []byte("p3"), b)

	outages.Store(2)
	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	env.WaitCount(out, 3, 60*time.Second)
	env.WaitCount(app+"-rejected", 1, 60*time.Second)
	r.Stop()

	var got []string
	for _, rec := range env.Read(out) {
		v, err := outCodec.Decode(rec.Value)
		if err != nil {
			t.Fatalf("output %q: %v", rec.Value, err)
		}
		got = append(got, string(rec.Key)+"="+strings.TrimSpace(v.String()))
	}
	slices.Sort(got)
	if want := []string{"p1=value:20", "p2=value:40", "p3=value:60"}; !slices.Equal(got, want) {
		t.Errorf("outputs %q, want %q", got, want)
	}
	rejected := env.Read(app + "-rejected")
	if len(rejected) != 1 || string(rejected[0].Key) != "json" || rejected[0].Headers[wire.HeaderRejectReason] != wire.ReasonUndecodable ||
		!strings.Contains(rejected[0].Headers[wire.HeaderRejectError], "magic byte 0x7b") {
		t.Errorf("rejected %+v, want only the JSON record, undecodable for its magic byte", rejected)
	}
	s := r.E.Stats()
	t.Logf("aborted %d, committed %d, rejected %d", s.Aborted, s.Committed, s.Rejected)
	if outages.Load() != 0 || s.Aborted < 2 {
		t.Errorf("outages left %d, aborted %d: the registry's 503s did not abort transactions", outages.Load(), s.Aborted)
	}
}
