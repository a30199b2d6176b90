package benchmarks

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestPeersExactlyOnce runs the Go peers' copy loops (and onceflow) once on
// the embedded broker and checks that every output holds exactly the input:
// the floor must be a correct exactly-once loop, or its numbers mean nothing.
// Correctness only, never timing.
func TestPeersExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs consumer groups on an embedded broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Records: 3000, Repeats: 1, Peers: true, Rate: 5000,
		Variants: []string{"eos", "sarama", "franz", "kstreams_eos"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sweep) != 1 {
		t.Fatalf("%d points, want 1", len(rep.Sweep))
	}
	res := rep.Sweep[0]
	if len(res.Runs) != 6 {
		t.Errorf("%d runs, want 6 (3 variants, 2 phases)", len(res.Runs))
	}
	for _, m := range res.Runs {
		if m.Error != "" || m.Check != "ok" || m.OutputRecords != 3000 {
			t.Errorf("%s %s: error %q, check %q, %d outputs", m.Variant, m.Phase, m.Error, m.Check, m.OutputRecords)
		}
		if m.Phase == PhaseLatency && (m.P50Ms <= 0 || m.P99Ms < m.P50Ms) {
			t.Errorf("%s latency: p50 %v p99 %v", m.Variant, m.P50Ms, m.P99Ms)
		}
		if m.Txn == nil || m.Txn.Transactions == 0 {
			t.Errorf("%s %s: no transactions counted: %+v", m.Variant, m.Phase, m.Txn)
		}
	}
	if _, ok := res.PeersSkipped["kstreams_eos"]; !ok {
		t.Errorf("Kafka Streams not skipped on the embedded broker: %v", res.PeersSkipped)
	}
	if res.Ratios["eos_over_sarama"] <= 0 || res.Ratios["sarama_over_franz"] <= 0 {
		t.Errorf("ratios %v", res.Ratios)
	}
}

// TestDirSize counts the state files under a run's directory, nested ones
// included (Pebble's WAL ends in .log too), and leaves out the Kafka
// Streams replicas' own logs.
func TestDirSize(t *testing.T) {
	dir := t.TempDir()
	files := map[string]int{"r1/000002.log": 700, "r1/000004.sst": 300, "r2/MANIFEST-000001": 20, "kstreams-r1.log": 5000}
	for name, n := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := dirSize(dir); got != 1020 {
		t.Errorf("dirSize = %d, want 1020 (700 + 300 + 20, the Kafka Streams log left out)", got)
	}
	if got := dirSize(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("dirSize of an absent directory = %d, want 0", got)
	}
}

// TestKStreamsThreads: Kafka Streams gets num.stream.threads through the
// peer's --threads.
func TestKStreamsThreads(t *testing.T) {
	for _, n := range []int{0, 1, 2} {
		args := kstreamsVariant{exactlyOnce: true}.args(RunSpec{Env: &Env{}, Workload: workloads["orders"], Threads: n}, "d")
		want := strconv.Itoa(max(n, 1))
		if i := slices.Index(args, "--threads"); i < 0 || i+1 >= len(args) || args[i+1] != want {
			t.Errorf("threads %d: Kafka Streams args %q lack --threads %s", n, args, want)
		}
	}
}
