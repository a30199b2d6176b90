package sinks

import (
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/internal/wire"
)

// HeaderIdempotencyKey is the header of an outbox record (and of a
// dead-letter record) that carries the delivery's idempotency key: what a
// topology test reads to check the key a delivery will be sent under.
const HeaderIdempotencyKey = wire.HeaderIdempotencyKey

// RunnerConfig configures the sink runner: how it retries and how many
// deliveries it keeps in flight. The zero value means every default.
type RunnerConfig struct {
	// AttemptTimeout bounds one attempt (the ctx Deliver gets). An attempt
	// that runs past it has an unknown outcome. Default 10 s.
	AttemptTimeout time.Duration
	// MaxAttempts is how many attempts a delivery gets before it is
	// dead-lettered. Default 10.
	MaxAttempts int
	// MaxElapsed is how long after its first attempt a delivery may still
	// be retried: a retry that would start later is not made, and the
	// delivery is dead-lettered. Default 1 hour.
	MaxElapsed time.Duration
	// BackoffBase and BackoffCap shape the wait before a retry: after the
	// n-th failed attempt (from 1), a uniform random wait in
	// [0, min(BackoffCap, BackoffBase·2^(n-1))] ("full jitter"), and never
	// less than a Retry-After the sink returned. Defaults 200 ms and 30 s.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// Parallelism is how many deliveries of one outbox partition may be
	// out at once, each for a different record key (deliveries of one key
	// go one after the other, in outbox order). Default 16.
	Parallelism int
	// MaxBuffered is how many deliveries of one outbox partition the
	// runner holds (in flight, waiting for their key, or waiting to
	// retry); reading the partition waits while it holds that many, so
	// memory stays bounded. Default 1024.
	MaxBuffered int
	// CommitInterval is how often the runner commits the outbox offsets
	// below which every delivery is settled. Default 1 s.
	CommitInterval time.Duration
	// LedgerRetention is how long the ledger keeps a succeeded delivery's
	// entry after it settled; then the entry is deleted (a tombstone in
	// its changelog), so the ledger does not grow forever. A request with
	// the same idempotency key read within it is skipped, one read later
	// is sent again: it must exceed how long a settled request can be
	// read again (the runner purges outbox records below its committed
	// offsets within a minute) and, with a key function, the time within
	// which a key reused on purpose must be taken for a replay.
	// Dead-lettered and unknown entries wait for an operator and never
	// expire. Default 7 days; negative: never.
	LedgerRetention time.Duration
}

// Validate reports every problem of c at once.
func (c RunnerConfig) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"AttemptTimeout", c.AttemptTimeout}, {"MaxElapsed", c.MaxElapsed}, {"BackoffBase", c.BackoffBase}, {"BackoffCap", c.BackoffCap}, {"CommitInterval", c.CommitInterval}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("sinks: %s %v is negative", d.name, d.v))
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"MaxAttempts", c.MaxAttempts}, {"Parallelism", c.Parallelism}, {"MaxBuffered", c.MaxBuffered}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("sinks: %s %d is negative", n.name, n.v))
		}
	}
	if c.BackoffCap > 0 && c.BackoffBase > c.BackoffCap {
		errs = append(errs, fmt.Errorf("sinks: BackoffBase %v is above BackoffCap %v", c.BackoffBase, c.BackoffCap))
	}
	return errors.Join(errs...)
}
