package engine

import (
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/kafka"
)

// A commit that takes more than half the transaction timeout is counted
// (and warned about); one below is not.
func TestSlowCommitsCounted(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: Config{Timeouts: kafka.Timeouts{Transaction: 8 * time.Second}}, m: m, log: hclog.NewNullLogger()}
	for _, took := range []time.Duration{time.Second, 4 * time.Second, 4100 * time.Millisecond, 7 * time.Second} {
		e.checkCommitLatency(took)
	}
	if n := m.slowCommits.value(); n != 2 {
		t.Errorf("slow commits: %d, want 2 (4.1 s and 7 s of an 8 s timeout)", n)
	}
}

// The transaction rate is the committed transactions per second between
// the oldest sample in the window and now.
func TestTransactionRate(t *testing.T) {
	var l live
	t0 := time.Unix(1000, 0)
	if r := l.rate(t0, 5); r != 0 {
		t.Errorf("rate without samples: %v", r)
	}
	for i := range 10 {
		l.sample(t0.Add(time.Duration(i)*10*time.Second), int64(100*i))
	}
	// Samples older than a minute are dropped: the oldest kept is at 30 s.
	now := t0.Add(100 * time.Second)
	if r := l.rate(now, 1000); r != (1000.0-300)/70 {
		t.Errorf("rate: %v, want %v", r, (1000.0-300)/70)
	}
}
