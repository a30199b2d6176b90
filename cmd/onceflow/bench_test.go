package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchJSON runs the CLI contract end to end on the embedded broker: one
// JSON object with the named fields, every figure positive, every check
// passed. It asserts correctness, never timing.
func TestBenchJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bench on an embedded broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := t.TempDir()
	code, stdout, stderr := cli(t, ctx, "bench", "--records", "2000", "--repeats", "1", "--warmup", "500", "--json", "--no-progress", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if rep["workload"] != "copy" || rep["broker"] != "embedded" {
		t.Errorf("workload %v, broker %v", rep["workload"], rep["broker"])
	}
	if notes, _ := json.Marshal(rep["notes"]); !strings.Contains(string(notes), "warm-up: one unmeasured copy") {
		t.Errorf("notes %s do not mention the warm-up run", notes)
	}
	if r, ok := rep["eos_over_alos"].(float64); !ok || r <= 0 {
		t.Errorf("eos_over_alos = %v", rep["eos_over_alos"])
	}
	for _, g := range []string{"eos", "alos"} {
		m, ok := rep[g].(map[string]any)
		if !ok {
			t.Fatalf("no %q object in %s", g, stdout)
		}
		for _, k := range []string{"records_per_sec", "p50_ms", "p99_ms", "commit_mean_ms", "records_per_txn", "cpu_sec_per_million", "peak_rss_mb"} {
			if v, ok := m[k].(float64); !ok || v <= 0 {
				t.Errorf("%s.%s = %v, want a positive number", g, k, m[k])
			}
		}
		if m["check"] != "ok" {
			t.Errorf("%s.check = %v", g, m["check"])
		}
	}
	for _, f := range []string{"results.json", "chart.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestBenchBrokerCPU names this test's own process as the broker (the
// embedded broker runs in it): every throughput run, and each variant's
// median, must carry a positive broker CPU per million records, and the
// table must have the column. CPU is read in clock ticks of 10 ms, so a
// run needs enough records to use several of them.
func TestBenchBrokerCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bench on an embedded broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"bench", "--records", "10000", "--repeats", "1", "--warmup", "0", "--no-latency", "--no-progress"}
	code, stdout, stderr := cli(t, ctx, append(args, "--json", "--broker-pids", strconv.Itoa(os.Getpid()))...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	var rep struct {
		BrokerPids []int `json:"broker_pids"`
		Sweep      []struct {
			EOS  map[string]any `json:"eos"`
			ALOS map[string]any `json:"alos"`
			Runs []struct {
				Variant   string  `json:"variant"`
				BrokerCPU float64 `json:"broker_cpu_sec_per_million"`
				CPU       float64 `json:"cpu_sec_per_million"`
				TotalCPU  float64 `json:"total_cpu_sec_per_million"`
			} `json:"runs"`
		} `json:"sweep"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if len(rep.BrokerPids) != 1 || rep.BrokerPids[0] != os.Getpid() {
		t.Errorf("broker_pids %v, want [%d]", rep.BrokerPids, os.Getpid())
	}
	if len(rep.Sweep) != 1 || len(rep.Sweep[0].Runs) != 2 {
		t.Fatalf("want one point with 2 runs, got %s", stdout)
	}
	for _, m := range rep.Sweep[0].Runs {
		// The broker is this process, so its CPU is the variant's.
		if m.BrokerCPU <= 0 || m.CPU <= 0 {
			t.Errorf("%s: broker CPU %v s/M, own CPU %v s/M, want both positive", m.Variant, m.BrokerCPU, m.CPU)
		}
		if m.TotalCPU != m.CPU+m.BrokerCPU {
			t.Errorf("%s: process + broker CPU %v s/M, want %v + %v", m.Variant, m.TotalCPU, m.CPU, m.BrokerCPU)
		}
	}
	for g, v := range map[string]map[string]any{"eos": rep.Sweep[0].EOS, "alos": rep.Sweep[0].ALOS} {
		if c, ok := v["broker_cpu_sec_per_million"].(float64); !ok || c <= 0 {
			t.Errorf("%s.broker_cpu_sec_per_million = %v, want a positive number", g, v["broker_cpu_sec_per_million"])
		}
	}

	code, stdout, stderr = cli(t, ctx, args...) // tables, no --broker-pids
	if code != exitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for _, col := range []string{"CPU s/M rec proc+broker", "broker CPU s/M rec", "min–max"} {
		if !strings.Contains(stdout, col) {
			t.Errorf("no %q in\n%s", col, stdout)
		}
	}
}

// TestBenchTargetsWritesFile runs `bench-targets` on a run directory with
// one step: TARGETS.md is written and printed, the missing steps are "no
// data", and a directory that does not exist is refused.
func TestBenchTargetsWritesFile(t *testing.T) {
	dir := t.TempDir()
	step := filepath.Join(dir, "orders-300k")
	if err := os.MkdirAll(step, 0o755); err != nil {
		t.Fatal(err)
	}
	res := `{"workload":"orders","commit_interval_ms":100,"records":300000,"eos":{"records_per_sec":40000,"cpu_sec_per_million":28,"check":"ok"},` +
		`"peers":{"kstreams_eos":{"records_per_sec":10000,"cpu_sec_per_million":40,"check":"ok"}}}`
	if err := os.WriteFile(filepath.Join(step, "results.json"), []byte(`{"sweep":[`+res+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	code, stdout, stderr := cli(t, ctx, "bench-targets", dir)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	file, err := os.ReadFile(filepath.Join(dir, "TARGETS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != stdout {
		t.Errorf("TARGETS.md differs from what was printed")
	}
	for _, s := range []string{"| orders EOS ≥ 2.0 × Kafka Streams EOS, 300,000 events | 300,000 events: 40,000 events/s / 10,000 events/s", "| 4.000 | ≥ 2.00 | **met** |", "| no data |"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("output lacks %q:\n%s", s, stdout)
		}
	}
	if code, _, _ := cli(t, ctx, "bench-targets", filepath.Join(dir, "absent")); code == exitOK {
		t.Error("bench-targets of an absent directory succeeded")
	}
}
