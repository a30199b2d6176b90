package benchmarks

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestColdWindow splits a run's looks at the cold records: the cold window
// ends at the first look with that many committed, the steady window
// starts there, and a run too short to split is measured whole.
func TestColdWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	look := func(s int, c int64, cpu time.Duration) sample {
		return sample{at: t0.Add(time.Duration(s) * time.Second), committed: c, cpu: cpu, brokerCPU: cpu / 2}
	}
	// A JVM that runs cold for its first 1000 records (1 s of CPU for 1000
	// records) and warm after (1 s for 4000).
	steps := []sample{look(0, 100, 0), look(1, 600, 500*time.Millisecond), look(2, 1100, time.Second),
		look(3, 3100, 1500*time.Millisecond), look(4, 5100, 2*time.Second), look(5, 5200, 2*time.Second)}
	c0, c1, steady, ok := coldWindow(steps, 1000)
	if !ok || c0.committed != 100 || c1.committed != 1100 || len(steady) != 4 || steady[0].committed != 1100 {
		t.Fatalf("split at 1000: cold %d..%d, steady from %d (%d looks), ok %v", c0.committed, c1.committed, steady[0].committed, len(steady), ok)
	}
	cold := figures(c0, c1, true)
	if cold.Records != 1000 || cold.RecordsPerSec != 500 || cold.CPUSecPerMillion != 1000 || cold.TotalCPUSecPerMillion != 1500 {
		t.Errorf("cold figures %+v, want 1000 records, 500/s, 1000 + 500 s per M", cold)
	}
	start, stop, fromStart := throughputWindow(steady, c1, 5200-c1.committed)
	warm := figures(start, stop, true)
	if fromStart || start.committed != 1100 || stop.committed != 5100 || warm.CPUSecPerMillion != 250 || warm.RecordsPerSec != 2000 {
		t.Errorf("steady window %d..%d (from start %v): %+v, want 1100..5100, 250 s per M, 2000/s", start.committed, stop.committed, fromStart, warm)
	}
	if f := figures(c0, c1, false); f.TotalCPUSecPerMillion != 0 {
		t.Errorf("total CPU %v without the broker's, want 0 (unknown)", f.TotalCPUSecPerMillion)
	}
	for _, tc := range []struct {
		name string
		cold int64
	}{{"no split asked", 0}, {"reached only by the last look", 5150}, {"never reached", 9000}} {
		if _, _, st, ok := coldWindow(steps, tc.cold); ok || len(st) != len(steps) {
			t.Errorf("%s: split %v, %d looks left, want the whole run", tc.name, ok, len(st))
		}
	}
}

// TestColdFiguresReported: the runs' cold figures come out as medians with
// their spread, and the table gives them on a line of their own.
func TestColdFiguresReported(t *testing.T) {
	var ms []Measurement
	for rep, cpu := range []float64{40, 60, 50} {
		ms = append(ms, Measurement{Variant: "kstreams_eos", Phase: PhaseThroughput, Repeat: rep, Check: "ok", RecordsPerSec: 1000,
			CPUSecPerMillion: 20, TotalCPUSecPerMillion: 30,
			Cold: &ColdFigures{Records: 100000, RecordsPerSec: 400, CPUSecPerMillion: cpu, TotalCPUSecPerMillion: cpu + 10}})
	}
	res := summarize(Point{Workload: "orders", CommitInterval: 100 * time.Millisecond}, 300000, ms, nil)
	ks := res.Peers["kstreams_eos"]
	if ks == nil || ks.Cold == nil || ks.Cold.CPUSecPerMillion != 50 || ks.Cold.TotalCPUSecPerMillion != 60 || ks.Cold.Records != 100000 {
		t.Fatalf("cold medians: %+v", ks)
	}
	if sp := ks.Spread["cold_cpu_sec_per_million"]; sp.Min != 40 || sp.Max != 60 {
		t.Errorf("cold spread %+v, want 40–60", sp)
	}
	if ks.CPUSecPerMillion != 20 {
		t.Errorf("steady CPU %v, want 20 (the cold part left out)", ks.CPUSecPerMillion)
	}
	var b bytes.Buffer
	rep := &Report{Result: res, Sweep: []Result{res}, ColdRecords: 100000}
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := "kstreams_eos cold window, first commit until 100000 records committed (100000 in it; left out above): CPU s/M rec proc+broker 60.00 (50.00–70.00), CPU s/M rec proc 50.00 (40.00–60.00), records/s 400 (400–400)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}
