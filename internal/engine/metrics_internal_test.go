package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape gathers reg: the value of every series as "name{label=value,...}"
// (app and instance left out; a histogram's value is its sample count), and
// the sum of each family.
func scrape(t *testing.T, reg *prometheus.Registry) (series, families map[string]float64) {
	t.Helper()
	gathered, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series, families = map[string]float64{}, map[string]float64{}
	for _, f := range gathered {
		for _, s := range f.GetMetric() {
			var kv []string
			for _, l := range s.GetLabel() {
				if l.GetName() != "app" && l.GetName() != "instance" {
					kv = append(kv, l.GetName()+"="+l.GetValue())
				}
			}
			var v float64
			switch {
			case s.Counter != nil:
				v = s.GetCounter().GetValue()
			case s.Gauge != nil:
				v = s.GetGauge().GetValue()
			case s.Histogram != nil:
				v = float64(s.GetHistogram().GetSampleCount())
			}
			series[f.GetName()+"{"+strings.Join(kv, ",")+"}"] = v
			families[f.GetName()] += v
		}
	}
	return series, families
}

// Stats and a scrape read the same counts: every field of Stats equals its
// series (or the sum of its family) on /metrics.
func TestStatsAndScrapeAgree(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	m.recordsIn.add("0_0", 2)
	m.recordsIn.add("0_1", 3)
	m.recordsOut.add("out", 4)
	m.rejected.add("duplicate", 5)
	for i, c := range []*counter{&m.committed, &m.aborted, &m.recreations, &m.rebalances, &m.restored, &m.wipes, &m.expired,
		&m.changesSent, &m.changesCollapsed, &m.purges, &m.dropped, &m.restoreWaits, &m.commitTimeouts, &m.txnShrinks,
		&m.txnGrows, &m.hangingTxns, &m.hangRecoveries} {
		c.Add(int64(6 + i))
	}
	want := Stats{RecordsIn: 5, RecordsOut: 4, Rejected: 5, Committed: 6, Aborted: 7, ProducerRecreations: 8, Sessions: 9,
		Restored: 10, Wipes: 11, Expired: 12, ChangelogRecords: 13, ChangesCollapsed: 14, Purges: 15, Dropped: 16,
		RestoreWaits: 17, CommitTimeouts: 18, TransactionShrinks: 19, TransactionGrows: 20, HangingTransactions: 21, HangRecoveries: 22}
	st := (&Engine{m: m}).Stats()
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}

	// Where each field of Stats is on /metrics: a series, or a family
	// whose series are summed.
	scraped := map[string]string{
		"RecordsIn":           "onceflow_records_in_total",
		"RecordsOut":          "onceflow_records_out_total",
		"Rejected":            "onceflow_rejected_records_total",
		"Committed":           "onceflow_transactions_total{outcome=committed}",
		"Aborted":             "onceflow_transactions_total{outcome=aborted}",
		"ProducerRecreations": "onceflow_producer_recreations_total{}",
		"Sessions":            "onceflow_rebalances_total{}",
		"Restored":            "onceflow_restored_records_total{}",
		"Wipes":               "onceflow_state_wipes_total{}",
		"Expired":             "onceflow_dedup_expired_total{}",
		"ChangelogRecords":    "onceflow_state_changes_total{outcome=sent}",
		"ChangesCollapsed":    "onceflow_state_changes_total{outcome=collapsed}",
		"Purges":              "onceflow_repartition_purges_total{}",
		"Dropped":             "onceflow_state_dropped_total{}",
		"RestoreWaits":        "onceflow_restore_waits_total{}",
		"CommitTimeouts":      "onceflow_commit_timeouts_total{}",
		"TransactionShrinks":  "onceflow_transaction_shrinks_total{}",
		"TransactionGrows":    "onceflow_transaction_grows_total{}",
		"HangingTransactions": "onceflow_hanging_transactions_total{}",
		"HangRecoveries":      "onceflow_hanging_transaction_recoveries_total{}",
	}
	series, families := scrape(t, reg)
	v := reflect.ValueOf(st)
	for i := range v.NumField() {
		field := v.Type().Field(i).Name
		where, ok := scraped[field]
		if !ok {
			t.Errorf("Stats.%s: no series named for it in this test", field)
			continue
		}
		got, served := series[where]
		if !strings.Contains(where, "{") {
			got, served = families[where]
		}
		if !served || int64(got) != v.Field(i).Int() {
			t.Errorf("Stats.%s = %d, %s = %v (served: %t)", field, v.Field(i).Int(), where, got, served)
		}
	}
}

// Labeled gauges serve one series per label set, and a dropped label set
// is no longer served: the lag of a partition given up, the size of a
// store no longer measured.
func TestLabeledGaugesDrop(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	m.setLag("in", 0, 4)
	m.setLag("in", 1, 9)
	m.setLag("in", 1, 7)
	m.stateBytes.set(storeTaskName{"totals", "0_0"}, 100)
	m.stateBytes.set(storeTaskName{"totals", "0_1"}, 200)
	series, _ := scrape(t, reg)
	for k, want := range map[string]float64{"onceflow_consumer_lag{partition=0,topic=in}": 4, "onceflow_consumer_lag{partition=1,topic=in}": 7,
		"onceflow_state_bytes{store=totals,task=0_0}": 100, "onceflow_state_bytes{store=totals,task=0_1}": 200} {
		if got, ok := series[k]; !ok || got != want {
			t.Errorf("%s = %v (served: %t), want %v", k, got, ok, want)
		}
	}
	m.dropLag("in", 1)
	m.stateBytes.drop(storeTaskName{"totals", "0_0"})
	series, _ = scrape(t, reg)
	for _, k := range []string{"onceflow_consumer_lag{partition=1,topic=in}", "onceflow_state_bytes{store=totals,task=0_0}"} {
		if _, ok := series[k]; ok {
			t.Errorf("%s still served after it was dropped", k)
		}
	}
	if _, ok := series["onceflow_consumer_lag{partition=0,topic=in}"]; !ok {
		t.Errorf("the lag of partition 0 is gone with partition 1's")
	}
}
