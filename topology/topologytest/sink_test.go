package topologytest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

var nopSink = sinks.Func(func(context.Context, sinks.Delivery) error { return nil })

// outbox reads the delivery requests of sink as (record key, idempotency
// key, payload, source).
func outbox(t *testing.T, d *topologytest.Driver, sink string) [][4]string {
	t.Helper()
	recs, err := topologytest.Output(d, topologytest.OutboxTopic(sink), serde.String(), serde.String()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got [][4]string
	for _, r := range recs {
		key, _ := r.Headers.Get("onceflow-idempotency-key")
		got = append(got, [4]string{r.Key, string(key), r.Value, r.Source})
	}
	return got
}

// Each record sent to a sink becomes a delivery request in the outbox,
// keyed by the record key, with an idempotency key from the sink name and
// the consumed record's coordinates, counted when one input makes several;
// a record read back from a repartition topic is keyed by its place there
// and keeps the original lineage.
func TestToSinkDefaultKeys(t *testing.T) {
	tp := topology.New("notify")
	in := topology.Source(tp, "orders", serde.String(), serde.String())
	lines := topology.FlatMap(in, func(k, v string) ([]topology.KeyValue[string, string], error) {
		var kvs []topology.KeyValue[string, string]
		for _, w := range strings.Fields(v) {
			kvs = append(kvs, topology.KeyValue[string, string]{Key: k, Value: w})
		}
		return kvs, nil
	})
	topology.ToSink(lines, "mail", nopSink, serde.String(), nil)
	moved := topology.Repartition(in, "by-value", serde.String(), serde.String())
	topology.ToSink(moved, "hook", nopSink, serde.String(), nil)

	d, err := topologytest.New(tp, topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src := topologytest.Input(d, "orders", serde.String(), serde.String())
	if err := src.Pipe("c-1", "a b c"); err != nil {
		t.Fatal(err)
	}
	if err := src.Pipe("c-2", "d"); err != nil {
		t.Fatal(err)
	}
	want := [][4]string{
		{"c-1", "mail:orders/0/0", "a", "orders/0/0"},
		{"c-1", "mail:orders/0/0#1", "b", "orders/0/0"},
		{"c-1", "mail:orders/0/0#2", "c", "orders/0/0"},
		{"c-2", "mail:orders/0/1", "d", "orders/0/1"},
	}
	if got := outbox(t, d, "mail"); !equal(got, want) {
		t.Errorf("mail outbox:\n got %q\nwant %q", got, want)
	}
	want = [][4]string{
		{"c-1", "hook:test-by-value-repartition/0/0", "a b c", "orders/0/0"},
		{"c-2", "hook:test-by-value-repartition/0/1", "d", "orders/0/1"},
	}
	if got := outbox(t, d, "hook"); !equal(got, want) {
		t.Errorf("hook outbox:\n got %q\nwant %q", got, want)
	}
}

// A key function replaces the default idempotency key; a non-string
// record key is written as text.
func TestToSinkKeyFunc(t *testing.T) {
	tp := topology.New("notify")
	in := topology.Source(tp, "orders", serde.Int64(), serde.String())
	topology.ToSink(in, "mail", nopSink, serde.String(), func(k int64, v string) string { return "order-" + v })
	d, err := topologytest.New(tp, topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := topologytest.Input(d, "orders", serde.Int64(), serde.String()).Pipe(42, "o-7"); err != nil {
		t.Fatal(err)
	}
	want := [][4]string{{"42", "order-o-7", "o-7", "orders/0/0"}}
	if got := outbox(t, d, "mail"); !equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A sink needs a name that can name topics, a sink and a payload codec,
// and is declared once; Describe shows its outbox and dead-letter topics.
func TestToSinkValidation(t *testing.T) {
	tp := topology.New("notify")
	in := topology.Source(tp, "orders", serde.String(), serde.String())
	topology.ToSink(in, "mail", nopSink, serde.String(), nil)
	ok := tp.Describe()
	if !strings.Contains(ok, "external sink mail -> outbox sink-mail, dead letters sink-mail-dlq [key/string]") {
		t.Errorf("describe does not show the sink:\n%s", ok)
	}
	topology.ToSink(in, "mail", nopSink, serde.String(), nil)
	topology.ToSink(in, "bad name", nopSink, serde.String(), nil)
	topology.ToSink(in, "x", nil, nil, nil)
	err := tp.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`"mail": the sink is declared twice`, `"bad name"`, `sink "x": sink is nil`, `sink "x": payload codec is nil`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func equal(a, b [][4]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
