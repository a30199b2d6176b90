package processor_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/sinks"
)

// documentedMetrics reads the metric list of the package doc: name → its
// label names (app and instance, on every series, left out).
func documentedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, m := range regexp.MustCompile(`(?m)^//\t(onceflow_[a-z_]+)(?:\{([a-z_,]+)\})?\s`).FindAllStringSubmatch(string(b), -1) {
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		slices.Sort(labels)
		out[m[1]] = labels
	}
	if len(out) < 20 {
		t.Fatalf("doc.go lists %d metrics; the list was not found", len(out))
	}
	return out
}

var updateMetrics = flag.Bool("update-metrics", false, "rewrite testdata/metrics.txt from a running replica's /metrics")

// metricFamilies lists what /metrics serves, one line per family sorted by
// name: its name, type, label names (app and instance included) and help.
func metricFamilies(families map[string]*dto.MetricFamily) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(families)) {
		f := families[name]
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		fmt.Fprintf(&b, "%s %s {%s} %s\n", name, strings.ToLower(f.GetType().String()),
			strings.Join(slices.Sorted(maps.Keys(labels)), ","), f.GetHelp())
	}
	return b.String()
}

// seriesLabels is a series' label names and values, app and instance left
// out, as "name=value,...".
func seriesLabels(m *dto.Metric) (names []string, key string) {
	var kv []string
	for _, l := range m.GetLabel() {
		if l.GetName() == "app" || l.GetName() == "instance" {
			continue
		}
		names = append(names, l.GetName())
		kv = append(kv, l.GetName()+"="+l.GetValue())
	}
	slices.Sort(names)
	slices.Sort(kv)
	return names, strings.Join(kv, ",")
}

// A running replica of the orders example, with an external sink, answers
// /metrics with every metric the package doc lists, with the labels it
// lists, and nothing else; each series a rate or an alert needs is there
// at zero before its first event: transaction outcomes, failure classes,
// rejection reasons, records in of a task that got no input, records out
// of each output, state size of each store of each task, and each sink
// outcome. The families served match testdata/metrics.txt.
func TestMetricsMatchTheDocumentedList(t *testing.T) {
	env := enginetest.New(t)
	app, in, out := env.Name("orders-app"), env.Name("orders"), env.Name("totals")
	env.CreateTopic(in, 3)
	reg := prometheus.NewRegistry()
	ok := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r1", StateDir: t.TempDir(),
		Registerer: reg}, orders.TopologyWithSinks(in, out, orders.Sinks{Notify: ok}))
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, reg)
	srv.waitCode("/readyz", 200, 60*time.Second)
	// Input on partitions 0 and 1 only: task 0_2 processes nothing.
	var recs []*kgo.Record
	for i := range 6 {
		e := orders.Event{EventID: fmt.Sprintf("e%d", i), OrderID: fmt.Sprintf("o%d", i), Customer: "c", Amount: 1, Version: 1}
		v, _ := json.Marshal(e)
		recs = append(recs, &kgo.Record{Topic: in, Partition: int32(i % 2), Key: []byte(e.Customer), Value: v,
			Headers: []kgo.RecordHeader{{Key: "event-id", Value: []byte(e.EventID)}}})
	}
	env.ProduceRecords(recs...)
	enginetest.WaitFor(t, "6 records processed", 60*time.Second, func() bool { return p.Status().Stats.RecordsIn == 6 })

	_, body := srv.get("/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	// The families served, with their types, labels and help texts, are
	// those of testdata/metrics.txt (go test ./processor -run
	// TestMetricsMatchTheDocumentedList -update-metrics rewrites it), so a
	// change to how metrics are kept does not change what a scrape sees.
	golden := filepath.Join("testdata", "metrics.txt")
	if got := metricFamilies(families); *updateMetrics {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(golden); err != nil {
		t.Fatal(err)
	} else if got != string(want) {
		t.Errorf("/metrics families differ from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
	}

	documented := documentedMetrics(t)
	gathered, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, f := range gathered {
		registered[f.GetName()] = true
	}
	for _, name := range slices.Sorted(maps.Keys(registered)) {
		if _, ok := documented[name]; !ok {
			t.Errorf("%s is registered but not listed in the package doc", name)
		}
	}
	series := map[string]bool{} // "name{labels}" of every series served
	for _, name := range slices.Sorted(maps.Keys(documented)) {
		if !registered[name] {
			t.Errorf("%s is listed in the package doc but not registered", name)
		}
		f, ok := families[name]
		if !ok {
			t.Errorf("%s is listed in the package doc but not served on /metrics", name)
			continue
		}
		if len(f.GetMetric()) == 0 {
			t.Errorf("%s has no series", name)
		}
		for _, m := range f.GetMetric() {
			names, key := seriesLabels(m)
			if !slices.Equal(names, documented[name]) {
				t.Errorf("%s{%s}: labels %v, the package doc lists %v", name, key, names, documented[name])
			}
			series[name+"{"+key+"}"] = true
		}
	}

	want := []string{
		"onceflow_transactions_total{outcome=aborted}",
		"onceflow_records_in_total{task=0_2}",
		"onceflow_records_out_total{topic=" + out + "}",
		"onceflow_records_out_total{topic=" + app + "-sink-" + orders.NotifySink + "}",
		"onceflow_sink_deliveries_total{outcome=dead-lettered,sink=" + orders.NotifySink + "}",
		"onceflow_sink_deliveries_total{outcome=unknown,sink=" + orders.NotifySink + "}",
		"onceflow_state_changes_total{outcome=collapsed}",
	}
	for _, class := range []string{"produce", "abortable", "fatal", "unknown"} {
		want = append(want, "onceflow_commit_failures_total{class="+class+"}")
	}
	for _, reason := range []string{"duplicate", "conflict", "stale", "undecodable", "processing-error", "too-large"} {
		want = append(want, "onceflow_rejected_records_total{reason="+reason+"}")
	}
	stores := map[string]bool{}
	for name := range series {
		if s, ok := strings.CutPrefix(name, "onceflow_state_bytes{store="); ok {
			stores[s[:strings.Index(s, ",")]] = true
		}
	}
	if len(stores) < 2 {
		t.Errorf("state size series of %d stores, want the orders example's dedup and version stores at least", len(stores))
	}
	for store := range stores {
		for p := range 3 {
			want = append(want, fmt.Sprintf("onceflow_state_bytes{store=%s,task=0_%d}", store, p))
		}
	}
	for _, s := range want {
		if !series[s] {
			t.Errorf("no series %s on /metrics", s)
		}
	}
	if t.Failed() {
		t.Logf("served series:\n%s", strings.Join(slices.Sorted(maps.Keys(series)), "\n"))
	}
}
