//go:build long

package benchmarks

import (
	"context"
	"testing"
	"time"
)

// TestThreads runs onceflow and the sarama loop with two threads per
// replica on the embedded broker: each run's group must hold two members
// (the latency run waits for them) and every output exactly the input.
func TestThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs consumer groups on an embedded broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Records: 3000, Repeats: 1, Threads: 2, Peers: true, Rate: 5000, Variants: []string{"eos", "sarama"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Threads != 2 {
		t.Errorf("report threads %d, want 2", rep.Threads)
	}
	for _, m := range rep.Sweep[0].Runs {
		if m.Error != "" || m.Check != "ok" || m.OutputRecords != 3000 {
			t.Errorf("%s %s: error %q, check %q, %d outputs", m.Variant, m.Phase, m.Error, m.Check, m.OutputRecords)
		}
	}
}
