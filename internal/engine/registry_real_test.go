//go:build registry

package engine_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/serde/registry"
	"github.com/onceflow/onceflow/topology"
)

type avroBalance struct {
	Account string `avro:"account"`
	Cents   int64  `avro:"cents"`
}

const avroBalanceSchema = `{"type":"record","name":"Balance","namespace":"shop","fields":[
	{"name":"account","type":"string"},{"name":"cents","type":"long"}]}`

// A topology reading Avro payments and writing Avro balances through the
// real registry ONCEFLOW_REGISTRY_URL names (make test-registry starts
// Apicurio Registry), on the embedded broker: every payment has its
// output, read back through the registry, and a record in another format
// is rejected.
func TestAvroThroughARealRegistry(t *testing.T) {
	url := os.Getenv("ONCEFLOW_REGISTRY_URL")
	if url == "" {
		t.Fatal("ONCEFLOW_REGISTRY_URL is not set (make test-registry sets it)")
	}
	ctx := context.Background()
	reg, err := registry.New(registry.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	env := enginetest.New(t)
	in, out, app := env.Name("payments"), env.Name("balances"), env.Name("app")
	env.CreateTopic(in, 2)
	inCodec, err := registry.Avro[avroPayment](ctx, reg, registry.AvroConfig{Schema: avroPaymentSchema, Subject: registry.Subject{Topic: in}})
	if err != nil {
		t.Fatal(err)
	}
	outCodec, err := registry.Avro[avroBalance](ctx, reg, registry.AvroConfig{Schema: avroBalanceSchema, Subject: registry.Subject{Topic: out}})
	if err != nil {
		t.Fatal(err)
	}
	tp := topology.New("balances")
	src := topology.Source(tp, in, serde.String(), inCodec)
	bal := topology.Map(src, func(k string, p avroPayment) (string, avroBalance, error) {
		return k, avroBalance{Account: k, Cents: 100 * p.Amount}, nil
	})
	topology.To(bal, out, serde.String(), outCodec)

	var want []string
	for i, acct := range []string{"a", "b", "c", "d"} {
		b, err := inCodec.Encode(avroPayment{ID: acct, Amount: int64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		env.ProduceRaw(in, []byte(acct), b)
		want = append(want, fmt.Sprintf("%s=%d", acct, 100*(i+1)))
	}
	env.ProduceRaw(in, []byte("text"), []byte("plain text"))

	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	env.WaitCount(out, 4, 60*time.Second)
	env.WaitCount(app+"-rejected", 1, 60*time.Second)
	r.Stop()

	var got []string
	for _, rec := range env.Read(out) {
		v, err := outCodec.Decode(rec.Value)
		if err != nil {
			t.Fatalf("output % x: %v", rec.Value, err)
		}
		got = append(got, fmt.Sprintf("%s=%d", v.Account, v.Cents))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("outputs %q, want %q", got, want)
	}
	rej := env.Read(app + "-rejected")
	if len(rej) != 1 || rej[0].Headers[wire.HeaderRejectReason] != wire.ReasonUndecodable {
		t.Errorf("rejected %+v, want the text record, undecodable", rej)
	}
}
