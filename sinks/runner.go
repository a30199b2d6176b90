package sinks

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/onceflow/onceflow/internal/wire"
)

// Headers of outbox and dead-letter records.
const (
	// HeaderIdempotencyKey carries a delivery's idempotency key, on
	// outbox and dead-letter records.
	HeaderIdempotencyKey = wire.HeaderIdempotencyKey
	// HeaderSource is the lineage of the input record a delivery descends
	// from ("topic/partition/offset").
	HeaderSource = wire.HeaderSource
	// HeaderError is the last error of a dead-lettered delivery.
	HeaderError = wire.HeaderSinkError
	// HeaderAttempts is how many attempts a dead-lettered delivery had.
	HeaderAttempts = wire.HeaderSinkAttempts
	// HeaderClass is the class of the last error of a dead-lettered
	// delivery (transient when its retry budget ran out, permanent), or
	// "conflict" for a delivery never sent because its idempotency key
	// was delivered before for another request: another payload, or,
	// with default keys, another request time (dead-lettered under
	// "<key>!conflict@<outbox partition>/<offset>").
	HeaderClass = wire.HeaderSinkClass
	// HeaderOutbox names the outbox record of a dead-lettered delivery
	// ("topic/partition/offset").
	HeaderOutbox = wire.HeaderSinkOutbox
	// HeaderCommand marks an outbox record as a command to the runner
	// rather than a new delivery request: CommandRedrive or
	// CommandResolve, for the delivery whose idempotency key the record
	// carries (see onceflow dlq redrive, onceflow sinks unknown resolve).
	// The record carries the delivery's payload and record key too.
	HeaderCommand = wire.HeaderSinkCommand
	// HeaderResolveAs is the outcome a CommandResolve gives a parked
	// delivery: ResolveSucceeded, ResolveFailed or ResolveRetry.
	HeaderResolveAs = wire.HeaderSinkResolveAs
)

// Commands (HeaderCommand values) and resolutions (HeaderResolveAs).
const (
	// CommandRedrive delivers a dead-lettered delivery again, under its
	// idempotency key, with a fresh retry budget.
	CommandRedrive = "redrive"
	// CommandResolve settles a delivery parked as unknown.
	CommandResolve = "resolve"
	// ResolveSucceeded: the effect happened; never sent again.
	ResolveSucceeded = "succeeded"
	// ResolveFailed: it did not happen and must not; dead-lettered.
	ResolveFailed = "failed"
	// ResolveRetry: it did not happen; sent again under the same key.
	ResolveRetry = "retry"
)

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

// Defaults of zero RunnerConfig fields.
const (
	DefaultAttemptTimeout  = 10 * time.Second
	DefaultMaxAttempts     = 10
	DefaultMaxElapsed      = time.Hour
	DefaultBackoffBase     = 200 * time.Millisecond
	DefaultBackoffCap      = 30 * time.Second
	DefaultParallelism     = 16
	DefaultMaxBuffered     = 1024
	DefaultCommitInterval  = time.Second
	DefaultLedgerRetention = 7 * 24 * time.Hour
)

// WithDefaults returns c with every zero field set to its default.
func (c RunnerConfig) WithDefaults() RunnerConfig {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&c.AttemptTimeout, DefaultAttemptTimeout)
	set(&c.MaxElapsed, DefaultMaxElapsed)
	set(&c.BackoffBase, DefaultBackoffBase)
	set(&c.BackoffCap, DefaultBackoffCap)
	set(&c.CommitInterval, DefaultCommitInterval)
	set(&c.LedgerRetention, DefaultLedgerRetention)
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Parallelism == 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.MaxBuffered == 0 {
		c.MaxBuffered = DefaultMaxBuffered
	}
	return c
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

// Backoff is the wait before the retry that follows the n-th failed
// attempt (n from 1): uniform in [0, min(cap, base·2^(n-1))] (full
// jitter), raised to retryAfter when that is longer. rnd gives the jitter.
//
// It is written out rather than taken from a backoff library:
// cenkalti/backoff's ExponentialBackOff randomises around the interval
// (interval·(1±factor), so up to twice the cap) and draws from the global
// random source, which a test cannot seed; full jitter with a cap is this
// one line.
func Backoff(base, cap time.Duration, n int, retryAfter time.Duration, rnd *rand.Rand) time.Duration {
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
