package benchmarks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeRuns is one point's measurements: two repeats of each variant, both
// phases.
func fakeRuns(eos, alos, sarama float64) []Measurement {
	var ms []Measurement
	for rep := range 2 {
		for _, v := range []struct {
			name string
			rps  float64
		}{{"eos", eos}, {"alos", alos}, {"sarama", sarama}} {
			ms = append(ms, Measurement{Variant: v.name, Phase: PhaseThroughput, Repeat: rep, RecordsPerSec: v.rps + float64(rep)*10,
				CPUSecPerMillion: 4, PeakRSSMB: 50, Check: "ok", Txn: &TxnStats{Transactions: 10, CommitP50Ms: 5, CommitP99Ms: 9, RecordsPerTxn: 1000}})
		}
		for _, v := range []string{"eos", "alos", "sarama"} {
			ms = append(ms, Measurement{Variant: v, Phase: PhaseLatency, Repeat: rep, Rate: eos / 2, AchievedRate: eos / 2,
				P50Ms: 40, P99Ms: 120 + float64(rep)*10, P999Ms: 140, MaxMs: 150, Check: "ok"})
		}
	}
	return ms
}

func TestSummarizeAndJSONShape(t *testing.T) {
	p := Point{Workload: "copy", CommitInterval: 100 * time.Millisecond, ValueSize: 100}
	res := summarize(p, 1000, fakeRuns(900, 1000, 1200), map[string]string{"kstreams_eos": "needs --brokers"})
	if res.EOS == nil || res.ALOS == nil || res.Peers["sarama"] == nil {
		t.Fatalf("variants missing: %+v", res)
	}
	if res.EOS.RecordsPerSec != 905 || res.ALOS.RecordsPerSec != 1005 {
		t.Errorf("medians: eos %v alos %v", res.EOS.RecordsPerSec, res.ALOS.RecordsPerSec)
	}
	if want := 905.0 / 1005; res.EOSOverALOS != want || res.Ratios["eos_over_alos"] != want {
		t.Errorf("eos_over_alos %v, ratios %v, want %v", res.EOSOverALOS, res.Ratios, want)
	}
	if want := 905.0 / 1205; res.Ratios["eos_over_sarama"] != want {
		t.Errorf("eos_over_sarama %v, want %v", res.Ratios["eos_over_sarama"], want)
	}
	if _, ok := res.Ratios["eos_over_franz"]; ok {
		t.Error("a ratio to a variant that did not run")
	}
	if res.EOS.P99Ms != 125 || res.P99TargetMs != 130 || res.EOS.LatencyRate != 450 {
		t.Errorf("latency: p99 %v target %v rate %v", res.EOS.P99Ms, res.P99TargetMs, res.EOS.LatencyRate)
	}

	rep := &Report{Result: res, Sweep: []Result{res}, Broker: "embedded", Partitions: 6, Replicas: 1, Repeats: 2}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(buf.Bytes(), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, buf.String())
	}
	for _, k := range []string{"workload", "eos", "alos", "eos_over_alos", "peers", "peers_skipped", "ratios", "sweep", "broker", "machine", "runs"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("JSON has no %q", k)
		}
	}
	eos, _ := obj["eos"].(map[string]any)
	for _, k := range []string{"records_per_sec", "p50_ms", "p99_ms", "commit_p50_ms", "commit_p99_ms", "records_per_txn", "cpu_sec_per_million", "peak_rss_mb", "latency_rate"} {
		if v, ok := eos[k].(float64); !ok || v <= 0 {
			t.Errorf("eos.%s = %v, want a positive number", k, eos[k])
		}
	}

	buf.Reset()
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"copy, commit interval 100ms, values 100 B", "eos/alos 0.900", "eos/sarama 0.751", "skipped kstreams_eos: needs --brokers", "within the target of 130 ms"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestSummarizeKeepsFailures(t *testing.T) {
	ms := fakeRuns(900, 1000, 1200)
	ms[0].Error = "not caught up"
	ms[1].Check = "output holds 999 records, want at least 1000"
	res := summarize(Point{Workload: "copy", CommitInterval: time.Second}, 1000, ms, nil)
	if res.EOS.RecordsPerSec != 910 || len(res.EOS.Errors) != 1 {
		t.Errorf("failed run not left out of the median or not reported: %+v", res.EOS)
	}
	if res.ALOS.Check != ms[1].Check {
		t.Errorf("alos check %q", res.ALOS.Check)
	}
	rep := &Report{Sweep: []Result{res}}
	if got := rep.OnceflowProblems(); len(got) != 2 {
		t.Errorf("problems %q", got)
	}
}

func TestWriteOut(t *testing.T) {
	var sweep []Result
	for _, ci := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		sweep = append(sweep, summarize(Point{Workload: "copy", CommitInterval: ci, ValueSize: 100}, 1000, fakeRuns(900, 1000, 1200), nil))
	}
	sweep = append(sweep, summarize(Point{Workload: "orders", CommitInterval: 100 * time.Millisecond}, 1000, fakeRuns(500, 600, 0), nil))
	rep := &Report{Result: sweep[1], Sweep: sweep}
	dir := t.TempDir()
	if err := WriteOut(rep, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "chart.svg", "chart.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "chart.svg"))
	for _, want := range []string{"copy, 100 B values: throughput", "orders: p99 end to end, at half the max EOS rate", "p99 ms (log)", "sarama"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

// TestSpreadAndPrimaryCPU checks that every figure has its median and its
// spread over the runs, that CPU per record (process + broker) is the
// table's first figure with throughput beside it, and that its ratios are
// in the JSON.
func TestSpreadAndPrimaryCPU(t *testing.T) {
	var ms []Measurement
	for rep, f := range []float64{1, 3, 2} {
		for _, v := range []struct {
			name     string
			cpu, rps float64
		}{{"eos", 10, 900}, {"kstreams_eos", 20, 800}} {
			ms = append(ms, Measurement{Variant: v.name, Phase: PhaseThroughput, Repeat: rep, Check: "ok",
				RecordsPerSec: v.rps * f, CPUSecPerMillion: v.cpu * f, BrokerCPUSecPerMillion: 5 * f, TotalCPUSecPerMillion: (v.cpu + 5) * f,
				PeakRSSMB: 100 * f, Txn: &TxnStats{Transactions: 3, CommitP50Ms: f, CommitP99Ms: 2 * f, CommitMeanMs: f, RecordsPerTxn: 10 * f}})
			ms = append(ms, Measurement{Variant: v.name, Phase: PhaseLatency, Repeat: rep, Check: "ok",
				AchievedRate: 100, P50Ms: 50 * f, P99Ms: 100 * f, P999Ms: 110 * f, MaxMs: 120 * f})
		}
	}
	res := summarize(Point{Workload: "orders", CommitInterval: 100 * time.Millisecond}, 1000, ms, nil)
	eos := res.EOS
	if eos == nil || eos.TotalCPUSecPerMillion != 30 || eos.CPUSecPerMillion != 20 || eos.BrokerCPUSecPerMillion != 10 || eos.RecordsPerSec != 1800 {
		t.Fatalf("eos medians: %+v", eos)
	}
	for _, name := range []string{"total_cpu_sec_per_million", "cpu_sec_per_million", "broker_cpu_sec_per_million", "records_per_sec",
		"p50_ms", "p99_ms", "p999_ms", "max_ms", "commit_p50_ms", "commit_p99_ms", "commit_mean_ms", "records_per_txn", "peak_rss_mb", "latency_rate"} {
		sp, ok := eos.Spread[name]
		if !ok || sp.Runs != 3 || sp.Min > sp.Max {
			t.Errorf("spread of %s: %+v (present %v), want 3 runs, min ≤ max", name, sp, ok)
		}
	}
	if sp := eos.Spread["total_cpu_sec_per_million"]; sp.Min != 15 || sp.Max != 45 {
		t.Errorf("total CPU spread %+v, want 15–45", sp)
	}
	if _, ok := eos.Spread["state_mb"]; ok {
		t.Error("a spread for state_mb, which no run measured")
	}
	if got := res.CPURatios["eos_over_kstreams_eos"]; got != 30.0/50 {
		t.Errorf("cpu ratio eos/kstreams_eos %v, want 0.6", got)
	}
	if got := res.ProcessCPURatios["eos_over_kstreams_eos"]; got != 0.5 {
		t.Errorf("process cpu ratio %v, want 0.5", got)
	}

	rep := &Report{Result: res, Sweep: []Result{res}, Repeats: 3}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"total_cpu_sec_per_million": 30`, `"cpu_ratios": {`, `"eos_over_kstreams_eos": 0.6`, `"spread": {`, `"min": 15,`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	b.Reset()
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"order rotated", "min–max", "15.00–45.00", "900–2700",
		"CPU per record, process + broker (lower is cheaper):  eos/kstreams_eos 0.600", "throughput:  eos/kstreams_eos 1.125"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	header := strings.Fields(strings.Split(out, "\n")[3])
	if len(header) < 6 || strings.Join(header[1:5], " ") != "CPU s/M rec proc+broker" {
		t.Errorf("the first figure is not CPU per record, process + broker: %q", header)
	}
}
