package benchmarks

import (
	"context"
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
