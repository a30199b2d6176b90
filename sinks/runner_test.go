package sinks_test

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
			d := sinks.Backoff(base, cap, n, 0, rnd)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: delay %v outside [0, %v]", n, d, ceiling)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo > ceiling/10 || hi < ceiling*9/10 {
			t.Errorf("attempt %d: delays in [%v, %v], want spread over [0, %v]", n, lo, hi, ceiling)
		}
		for _, ra := range []time.Duration{time.Millisecond, 5 * time.Second} {
			if d := sinks.Backoff(base, cap, n, ra, rnd); d < ra || d > max(ra, ceiling) {
				t.Errorf("attempt %d, Retry-After %v: delay %v", n, ra, d)
			}
		}
	}
	// A seeded source gives the same schedule.
	a, b := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for n := 1; n < 20; n++ {
		if x, y := sinks.Backoff(base, cap, n, 0, a), sinks.Backoff(base, cap, n, 0, b); x != y {
			t.Fatalf("attempt %d: %v and %v from one seed", n, x, y)
		}
	}
	if d := sinks.Backoff(base, cap, 200, 0, rnd); d > cap {
		t.Errorf("attempt 200: %v above the cap", d)
	}
}

func TestRunnerConfigValidate(t *testing.T) {
	if err := (sinks.RunnerConfig{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	err := sinks.RunnerConfig{MaxAttempts: -1, AttemptTimeout: -time.Second, BackoffBase: time.Minute, BackoffCap: time.Second}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"MaxAttempts", "AttemptTimeout", "BackoffBase"} {
		if !contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if c := (sinks.RunnerConfig{}).WithDefaults(); c.Parallelism != 16 || c.MaxAttempts != 10 || c.BackoffCap != 30*time.Second {
		t.Errorf("defaults %+v", c)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
