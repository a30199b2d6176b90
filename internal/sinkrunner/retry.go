package sinkrunner

import (
	"math/rand/v2"
	"time"

	"github.com/onceflow/onceflow/sinks"
)

// withDefaults returns c with every zero field set to the default its
// documentation names.
func withDefaults(c sinks.RunnerConfig) sinks.RunnerConfig {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&c.AttemptTimeout, 10*time.Second)
	set(&c.MaxElapsed, time.Hour)
	set(&c.BackoffBase, 200*time.Millisecond)
	set(&c.BackoffCap, 30*time.Second)
	set(&c.CommitInterval, time.Second)
	set(&c.LedgerRetention, 7*24*time.Hour)
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	if c.Parallelism == 0 {
		c.Parallelism = 16
	}
	if c.MaxBuffered == 0 {
		c.MaxBuffered = 1024
	}
	return c
}

// backoff is the wait before the retry that follows the n-th failed
// attempt (n from 1): uniform in [0, min(cap, base·2^(n-1))] (full
// jitter), raised to retryAfter when that is longer. rnd gives the jitter.
//
// It is written out rather than taken from a backoff library:
// cenkalti/backoff's ExponentialBackOff randomises around the interval
// (interval·(1±factor), so up to twice the cap) and draws from the global
// random source, which a test cannot seed; full jitter with a cap is this
// one line.
func backoff(base, cap time.Duration, n int, retryAfter time.Duration, rnd *rand.Rand) time.Duration {
	ceiling := base
	for i := 1; i < n && ceiling < cap; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, cap)
	var wait time.Duration
	if ceiling > 0 {
		wait = time.Duration(rnd.Int64N(int64(ceiling) + 1))
	}
	return max(wait, retryAfter)
}
