package sinkrunner

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Status and a scrape read the same counts: each series of each sink
// carries the value Status reports, every series exists at zero before the
// first event, and a runner without a registry still counts.
func TestStatusAndScrapeAgree(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, "app", "r1", []string{"mail", "hook"})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{m: m}
	mail := m.sink("mail")
	mail.succeeded.Add(5)
	mail.deadLettered.Add(1)
	mail.deadLetters.Add(1)
	mail.unknownOutcome.Add(2)
	mail.unknown.Add(2)
	mail.unknown.Add(-1)
	mail.skipped.Add(3)
	mail.retries.Add(4)
	mail.backlog.Add(7)
	mail.staleEntries.Add(6)
	m.purges.Add(2)

	st := r.Status()
	if len(st) != 2 || st[0].Sink != "hook" || st[1].Sink != "mail" {
		t.Fatalf("Status = %+v, want hook then mail", st)
	}
	want := SinkStatus{Sink: "mail", Outcomes: map[string]int64{OutcomeSucceeded: 5, OutcomeDeadLettered: 1, OutcomeUnknown: 2, OutcomeSkipped: 3},
		Backlog: 7, Unknown: 1, Retries: 4, DeadLetters: 1}
	if got := st[1]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Status of mail = %+v, want %+v", got, want)
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	scraped := map[string]float64{} // "name{label=value,...}" → value, app and instance left out
	for _, f := range families {
		for _, s := range f.GetMetric() {
			var kv []string
			for _, l := range s.GetLabel() {
				if l.GetName() != "app" && l.GetName() != "instance" {
					kv = append(kv, l.GetName()+"="+l.GetValue())
				}
			}
			key := f.GetName() + "{" + strings.Join(kv, ",") + "}"
			switch {
			case s.Counter != nil:
				scraped[key] = s.GetCounter().GetValue()
			case s.Gauge != nil:
				scraped[key] = s.GetGauge().GetValue()
			case s.Histogram != nil:
				scraped[key] = float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	expect := map[string]float64{"onceflow_sink_outbox_purges_total{}": 2}
	for _, s := range st {
		for o, n := range s.Outcomes {
			expect[fmt.Sprintf("onceflow_sink_deliveries_total{outcome=%s,sink=%s}", o, s.Sink)] = float64(n)
		}
		expect["onceflow_sink_retries_total{sink="+s.Sink+"}"] = float64(s.Retries)
		expect["onceflow_sink_backlog{sink="+s.Sink+"}"] = float64(s.Backlog)
		expect["onceflow_sink_dead_letters_total{sink="+s.Sink+"}"] = float64(s.DeadLetters)
		expect["onceflow_sink_unknown{sink="+s.Sink+"}"] = float64(s.Unknown)
		expect["onceflow_sink_delivery_seconds{sink="+s.Sink+"}"] = 0
	}
	expect["onceflow_sink_ledger_stale_entries_total{sink=hook}"] = 0
	expect["onceflow_sink_ledger_stale_entries_total{sink=mail}"] = 6
	for _, k := range slices.Sorted(maps.Keys(expect)) {
		if got, ok := scraped[k]; !ok || got != expect[k] {
			t.Errorf("%s = %v (served: %t), want %v", k, got, ok, expect[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(scraped)) {
		if _, ok := expect[k]; !ok {
			t.Errorf("%s served, not expected", k)
		}
	}

	bare, err := newMetrics(nil, "app", "r1", []string{"mail"})
	if err != nil {
		t.Fatal(err)
	}
	bare.sink("mail").retries.Add(1)
	if got := (&Runner{m: bare}).Status(); len(got) != 1 || got[0].Retries != 1 {
		t.Errorf("Status without a registry = %+v, want mail with 1 retry", got)
	}
}
