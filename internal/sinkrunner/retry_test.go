package sinkrunner

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/onceflow/onceflow/sinks"
)

// Every delay after the n-th failed attempt lies in
// [0, min(cap, base·2^(n-1))], covers that range (full jitter, not a fixed
// schedule), and is never below a Retry-After.
func TestBackoffFullJitter(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	base, cap := 100*time.Millisecond, 3*time.Second
	for n := 1; n <= 12; n++ {
		ceiling := min(cap, base*time.Duration(1<<(n-1)))
		var lo, hi time.Duration = ceiling, 0
		for range 2000 {
			d := backoff(base, cap, n, 0, rnd)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: delay %v outside [0, %v]", n, d, ceiling)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo > ceiling/10 || hi < ceiling*9/10 {
			t.Errorf("attempt %d: delays in [%v, %v], want spread over [0, %v]", n, lo, hi, ceiling)
		}
		for _, ra := range []time.Duration{time.Millisecond, 5 * time.Second} {
			if d := backoff(base, cap, n, ra, rnd); d < ra || d > max(ra, ceiling) {
				t.Errorf("attempt %d, Retry-After %v: delay %v", n, ra, d)
			}
		}
	}
	// A seeded source gives the same schedule.
	a, b := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for n := 1; n < 20; n++ {
		if x, y := backoff(base, cap, n, 0, a), backoff(base, cap, n, 0, b); x != y {
			t.Fatalf("attempt %d: %v and %v from one seed", n, x, y)
		}
	}
	if d := backoff(base, cap, 200, 0, rnd); d > cap {
		t.Errorf("attempt 200: %v above the cap", d)
	}
}

// The defaults are the ones sinks.RunnerConfig documents, and a field set
// keeps its value.
func TestRunnerConfigDefaults(t *testing.T) {
	want := sinks.RunnerConfig{
		AttemptTimeout: 10 * time.Second, MaxAttempts: 10, MaxElapsed: time.Hour,
		BackoffBase: 200 * time.Millisecond, BackoffCap: 30 * time.Second,
		Parallelism: 16, MaxBuffered: 1024, CommitInterval: time.Second,
		LedgerRetention: 7 * 24 * time.Hour,
	}
	if got := withDefaults(sinks.RunnerConfig{}); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	set := sinks.RunnerConfig{AttemptTimeout: 1, MaxAttempts: 2, MaxElapsed: 3, BackoffBase: 4, BackoffCap: 5, Parallelism: 6, MaxBuffered: 7, CommitInterval: 8, LedgerRetention: -1}
	if got := withDefaults(set); got != set {
		t.Errorf("set fields changed: %+v, want %+v", got, set)
	}
}
