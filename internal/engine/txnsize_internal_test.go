package engine

import (
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/kafka"
)

// Transactions halve on each commit under pressure, down to 1/16 of the
// configured size, hold between the thresholds, and double back after
// growAfter healthy commits in a row, up to the configured size.
func TestTxnSizeShrinksAndGrowsBack(t *testing.T) {
	s := newTxnSize(1000, 100*time.Millisecond)
	check := func(what string, records int, interval time.Duration) {
		t.Helper()
		if s.records != records || s.interval != interval {
			t.Errorf("%s: %d records, %v; want %d, %v", what, s.records, s.interval, records, interval)
		}
	}
	healthy := func(n int) (changes int) {
		for range n {
			changes += s.observe(0.1)
		}
		return changes
	}
	if got := healthy(50); got != 0 {
		t.Errorf("healthy commits at full size changed it %d times", got)
	}
	check("healthy", 1000, 100*time.Millisecond)
	if got := s.observe(0.6); got != -1 {
		t.Errorf("a commit at 60%% of its deadline: %d, want -1 (shrink)", got)
	}
	check("one shrink", 500, 50*time.Millisecond)
	for range 10 {
		s.observe(0.9)
	}
	check("at the floor", 62, 6250*time.Microsecond)
	if got := s.observe(1); got != 0 {
		t.Errorf("a shrink below the floor: %d, want 0", got)
	}
	if got := s.observe(0.4); got != 0 {
		t.Errorf("a commit between the thresholds: %d, want 0", got)
	}
	if got := healthy(growAfter - 1); got != 0 {
		t.Errorf("%d healthy commits grew the size", growAfter-1)
	}
	s.observe(0.3) // not healthy: the count starts again
	if got := healthy(growAfter - 1); got != 0 {
		t.Errorf("the healthy count survived a commit between the thresholds")
	}
	if got := healthy(1); got != 1 {
		t.Errorf("%d healthy commits in a row: %d, want 1 (grow)", growAfter, got)
	}
	check("one step back", 125, 12500*time.Microsecond)
	if got := healthy(10 * growAfter); got != 3 {
		t.Errorf("growing back to the configured size took %d steps, want 3", got)
	}
	check("grown back", 1000, 100*time.Millisecond)

	tiny := newTxnSize(3, time.Millisecond)
	for range shrinkSteps {
		tiny.observe(1)
	}
	if tiny.records != 1 || tiny.interval != time.Millisecond {
		t.Errorf("a tiny size shrunk to %d records, %v; want 1 record, 1ms", tiny.records, tiny.interval)
	}
}

// A commit's pressure is the larger of its latency over the commit
// timeout and the transaction's age over the transaction timeout; a shrink
// is counted and exported.
func TestCommitPressureShrinksTransactions(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: Config{Timeouts: kafka.Timeouts{Transaction: 8 * time.Second, Commit: 4 * time.Second}}, m: m,
		log: hclog.NewNullLogger(), commits: commitWatch{size: newTxnSize(1000, time.Second)}}
	for _, c := range []struct {
		took, age time.Duration
		want      float64
	}{
		{time.Second, 2 * time.Second, 0.25},
		{3 * time.Second, 4 * time.Second, 0.75},
		{time.Second, 6 * time.Second, 0.75},
	} {
		if got := e.commitPressure(c.took, c.age); got != c.want {
			t.Errorf("pressure of a %v commit of a transaction open %v: %v, want %v", c.took, c.age, got, c.want)
		}
	}
	e.sizeTransactions(e.commitPressure(3*time.Second, 4*time.Second), 3*time.Second, 4*time.Second)
	if n := m.txnShrinks.value(); n != 1 {
		t.Errorf("shrinks: %d, want 1", n)
	}
	if v := int64(m.txnRecordsLimit.value()); v != 500 {
		t.Errorf("records limit: %d, want 500", v)
	}
}
