package engine

import (
	"strings"
	"testing"
	"time"
)

// Stalls are measured per partition from the first input not committed:
// aborts and rewinds do not reset the clock, a commit of the partition
// does, a revoked partition is forgotten, and a restore stalls when it
// stops restoring records.
func TestProgressStalls(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newProgress(func() time.Time { return now })
	bound := time.Minute
	p.assign(map[string][]int32{"in": {0, 1}})
	p.received("in", 0)
	p.received("in", 1)
	now = now.Add(30 * time.Second)
	p.aborted()
	p.received("in", 0) // the rewound input comes again
	if s, _ := p.stalls(bound, 0); len(s) != 0 {
		t.Fatalf("stalled after 30s: %v", s)
	}
	p.committed(map[string]map[int32]int64{"in": {1: 10}})
	now = now.Add(31 * time.Second)
	s, aborts := p.stalls(bound, 0)
	if len(s) != 1 || s[0].what != "in/0" || aborts != 0 {
		t.Fatalf("stalls %v, aborts %d; want in/0 only (its input pending 61s), 0 aborts since the commit", s, aborts)
	}
	p.aborted()
	p.aborted()
	if _, aborts := p.stalls(bound, 0); aborts != 2 {
		t.Errorf("aborts since the last commit %d, want 2", aborts)
	}
	if got := p.oldestPending(); got != 61*time.Second {
		t.Errorf("oldest pending %v, want 61s", got)
	}
	p.assign(map[string][]int32{"in": {1}})
	if s, _ := p.stalls(bound, 0); len(s) != 0 {
		t.Errorf("a revoked partition still stalls: %v", s)
	}

	p.restoring(true, 5)
	now = now.Add(50 * time.Second)
	if s, _ := p.stalls(bound, 9); len(s) != 0 { // 4 records restored: it moves
		t.Errorf("a moving restore stalls: %v", s)
	}
	now = now.Add(61 * time.Second)
	if s, _ := p.stalls(bound, 9); len(s) != 1 || s[0].what != "restore" {
		t.Errorf("stalls %v; want the restore, still for 61s", s)
	}
	p.restoring(false, 9)
	if s, _ := p.stalls(bound, 9); len(s) != 0 {
		t.Errorf("a finished restore stalls: %v", s)
	}
}

// Health names the stalled partition, how long and the aborts.
func TestHealthNamesTheStall(t *testing.T) {
	now := time.Unix(1000, 0)
	m, err := newMetrics(nil, "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: Config{StallTimeout: time.Minute}, m: m, commits: commitWatch{progress: newProgress(func() time.Time { return now })}}
	if err := e.Health(); err != nil {
		t.Fatalf("Health with nothing pending: %v", err)
	}
	e.commits.progress.received("in", 3)
	e.commits.progress.aborted()
	now = now.Add(90 * time.Second)
	err = e.Health()
	if err == nil {
		t.Fatal("Health: nil after 90s of pending input")
	}
	for _, want := range []string{"partition in/3", "1m30s", "1 transactions aborted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Health: %v; lacks %q", err, want)
		}
	}
}
