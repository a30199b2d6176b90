package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
