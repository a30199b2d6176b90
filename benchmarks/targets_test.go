package benchmarks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeStep writes a step directory of a full run: results.json with one
// point of workload holding the given variants, and command.txt.
func writeStep(t *testing.T, dir, step, workload string, valueSize int, vs map[string]*VariantResult) {
	t.Helper()
	res := Result{Workload: workload, CommitIntervalMs: 100, ValueSize: valueSize, Records: 300000, Peers: map[string]*VariantResult{}}
	for n, v := range vs {
		if v.Check == "" {
			v.Check = "ok"
		}
		switch n {
		case "eos":
			res.EOS = v
		case "alos":
			res.ALOS = v
		default:
			res.Peers[n] = v
		}
	}
	rep := Report{Result: res, Sweep: []Result{res}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, step), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, step, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := "onceflow bench ...\ncommit abc1234\nstarted 2026-11-30T22:10:00Z\nload average before: 0.50 0.40 0.30\nfinished 2026-11-30T22:11:00Z\nload average after: 1.90 1.00 0.50\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, step, "command.txt"), []byte(cmd), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEvaluateTargets computes the targets of a small full run: a target
// met (orders EOS at 2.0 × Kafka Streams at 300k), one not met (0.67 × at
// 3M), the CPU growth, the restore and SIGKILL figures parsed from the
// scenario's own output lines, and a step that did not run (copy) giving
// "no data" rather than a verdict.
func TestEvaluateTargets(t *testing.T) {
	dir := t.TempDir()
	writeStep(t, dir, StepOrders300k, "orders", 0, map[string]*VariantResult{
		"eos":          {RecordsPerSec: 40000, CPUSecPerMillion: 28, BrokerCPUSecPerMillion: 20, P50Ms: 60, P99Ms: 120, LatencyRate: 2000, StateMB: 40},
		"alos":         {RecordsPerSec: 50000, CPUSecPerMillion: 27},
		"kstreams_eos": {RecordsPerSec: 20000, CPUSecPerMillion: 40, BrokerCPUSecPerMillion: 32, P99Ms: 165, LatencyRate: 2000},
	})
	writeStep(t, dir, StepOrders3M, "orders", 0, map[string]*VariantResult{
		"eos":  {RecordsPerSec: 16000, CPUSecPerMillion: 42, BrokerCPUSecPerMillion: 18, TotalCPUSecPerMillion: 60},
		"alos": {RecordsPerSec: 16000, CPUSecPerMillion: 41},
		"kstreams_eos": {RecordsPerSec: 24000, CPUSecPerMillion: 28, BrokerCPUSecPerMillion: 12, TotalCPUSecPerMillion: 40,
			Cold: &ColdFigures{CPUSecPerMillion: 39.9}, Spread: map[string]Spread{"cpu_sec_per_million": {Min: 26, Max: 31, Runs: 3}}},
	})
	writeStep(t, dir, StepOrders300kThreads, "orders", 0, map[string]*VariantResult{
		"eos":          {RecordsPerSec: 30000, CPUSecPerMillion: 30, BrokerCPUSecPerMillion: 10},
		"kstreams_eos": {RecordsPerSec: 20000, CPUSecPerMillion: 30, BrokerCPUSecPerMillion: 20},
	})
	restore := strings.Join([]string{
		"killed r3 (pid 4242) with SIGKILL at 75000 of 300000 committed; restarting it on its state",
		"  r3 back: restored 0 changelog records; kill -> exit 1.42 s, restart -> ready 0.49 s, kill -> ready 1.91 s",
		"  r3 back: restored 12 changelog records; kill -> exit 1.75 s, restart -> ready 1.16 s, kill -> ready 2.91 s",
		"cold restore: 765000 changelog records in 3.06 s to ready (process start, group join and restore) = 250000 records/s",
	}, "\n")
	if err := os.MkdirAll(filepath.Join(dir, StepRestore), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, StepRestore, "output.txt"), []byte(restore), 0o644); err != nil {
		t.Fatal(err)
	}

	ts, err := EvaluateTargets(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Target{}
	for _, tg := range ts {
		byName[tg.Name] = tg
	}
	want := []struct{ name, status, value string }{
		{"orders EOS CPU per event, process + broker, over Kafka Streams EOS's, 300,000 events", Reported, "0.667"},
		{"orders EOS CPU per event, process, over Kafka Streams EOS's, 300,000 events", Reported, "0.700"},
		{"orders EOS CPU per event, process + broker, over Kafka Streams EOS's, 3,000,000 events", NotMet, "1.500"},
		{"orders EOS CPU per event, process, over Kafka Streams EOS's, 3,000,000 events", NotMet, "1.500"},
		{"orders EOS ≥ 2.0 × Kafka Streams EOS, 300,000 events", Met, "2.000"},
		{"orders EOS CPU per event, process + broker, over Kafka Streams EOS's, 300,000 events, two threads each", Reported, "0.800"},
		{"orders EOS throughput over Kafka Streams EOS's, 300,000 events, two threads each", Reported, "1.500"},
		{"orders EOS throughput over Kafka Streams EOS's, 3,000,000 events, two threads each", NoData, "–"},
		{"orders EOS ≥ 2.0 × Kafka Streams EOS, 3,000,000 events", NotMet, "0.667"},
		{"orders EOS ≥ 0.90 × ALOS, 300,000 events", NotMet, "0.800"},
		{"orders EOS ≥ 0.90 × ALOS, 3,000,000 events", Met, "1.000"},
		{"orders EOS CPU per event grows ≤ 25 % from 300,000 to 3,000,000 events", NotMet, "+50 %"},
		{"the bound on this machine: Kafka Streams EOS over onceflow EOS CPU per event, processor + broker, 300,000 events", Reported, "1.500"},
		{"orders EOS p99 ≤ interval + 30 ms at 2,000 events/s", Met, "120 ms"},
		{"copy EOS ≥ 0.95 × ALOS, 100 B", NoData, "–"},
		{"copy EOS ≥ 1.0 × sarama loop, CPU per record (the loop's over EOS's), 1 KB", NoData, "–"},
		{"orders EOS p99 at half the maximum", NoData, "–"},
		{"cold restore ≥ 250,000 changelog records/s", Met, "250,000/s"},
		{"SIGKILL → processing (kill → ready) < 2 s, state local", NotMet, "worst 2.91 s"},
		{"restart → ready < 2 s after a SIGKILL, state local", Met, "worst 1.16 s"},
		{"scale: orders EOS, 12 partitions, 2 replica(s)", NoData, "–"},
		{"state-size cost: orders EOS after 300,000 events", Reported, "28.0 CPU s per M"},
	}
	for _, w := range want {
		got, ok := byName[w.name]
		if !ok {
			t.Errorf("no target %q", w.name)
			continue
		}
		if got.Status != w.status || got.Value != w.value {
			t.Errorf("%s: %s %q, want %s %q (measured: %s)", w.name, got.Status, got.Value, w.status, w.value, got.Measured)
		}
	}
	if m := byName["state-size cost: orders EOS after 300,000 events"].Measured; !strings.Contains(m, "Pebble 40 MB") {
		t.Errorf("state-size measured %q does not give the Pebble size", m)
	}
	if m := byName["orders EOS ≥ 2.0 × Kafka Streams EOS, 300,000 events"].Measured; !strings.Contains(m, "CPU 48.0 s per M process + broker, process 28.0 + broker 20.0") {
		t.Errorf("orders measured %q does not give the broker's CPU", m)
	}

	var b bytes.Buffer
	if err := WriteTargets(&b, dir, ts); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{
		"| orders EOS ≥ 2.0 × Kafka Streams EOS, 300,000 events | 300,000 events: 40,000 events/s / 20,000 events/s",
		"Kafka Streams CPU 40.0 s per M process + broker, process 28.0 (26.0–31.0) + broker 12.0 (steady; cold 39.9), 24,000 events/s",
		"| 1.500 | ≤ 0.75 | **not met** |",
		"## Durability and dedup",
		"| 2.000 | ≥ 2.00 | **met** |",
		"| 0.667 | ≥ 2.00 | **not met** |",
		"`orders-300k`: started 2026-11-30T22:10:00Z; load average before: 0.50 0.40 0.30",
		"exit 0",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("TARGETS.md lacks %q:\n%s", s, out)
		}
	}
}

// TestEvaluateTargetsFailedCheck gives no verdict from a run whose output
// check failed: its figures mean nothing.
func TestEvaluateTargetsFailedCheck(t *testing.T) {
	dir := t.TempDir()
	writeStep(t, dir, StepOrders300k, "orders", 0, map[string]*VariantResult{
		"eos":          {RecordsPerSec: 90000, CPUSecPerMillion: 20, Check: "2 outputs missing"},
		"kstreams_eos": {RecordsPerSec: 20000, CPUSecPerMillion: 40},
	})
	ts, err := EvaluateTargets(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range ts {
		if tg.Name == "orders EOS ≥ 2.0 × Kafka Streams EOS, 300,000 events" {
			if tg.Status != NoData || !strings.Contains(tg.Measured, "2 outputs missing") {
				t.Errorf("got %s (%s), want no data with the check's problem", tg.Status, tg.Measured)
			}
			return
		}
	}
	t.Error("no orders 300k target")
}
