// Package sinks delivers effects outside Kafka (HTTP calls, database
// writes, any side effect) exactly once per event where the Kafka
// transaction ends.
//
// A topology writes a delivery request to an outbox topic inside its
// transaction (topology.ToSink); a sink runner reads the outbox
// read_committed and calls the Sink with a stable idempotency key, retrying
// transient failures with backoff and jitter, recording each delivery in a
// ledger, and parking what it cannot decide (a permanent failure, an
// exhausted retry budget, an outcome it cannot know) in a visible
// dead-letter topic or as unknown, never dropping it.
//
// # The runner
//
// The runner (RunnerConfig) runs in every replica (processor.Config.Sinks),
// or alone (processor.Config.OnlySinks, onceflow run --only-sinks), in a
// consumer group of its own, "<application id>-sinks", reading every outbox
// read_committed. Deliveries of one record key go in outbox order; different
// keys go in parallel up to RunnerConfig.Parallelism per outbox partition,
// with at most RunnerConfig.MaxBuffered held per partition. Each outbox
// partition has a delivery ledger (Pebble, backed by the compacted topic
// "<application id>-sink-<name>-ledger-changelog"), keyed by idempotency
// key: pending, succeeded, failed, dead-lettered or unknown, with attempts,
// last error and timestamps. A success is in the ledger before the outbox
// offset past it is committed, and offsets are committed only below the
// lowest delivery not settled, so a delivery that succeeded is never sent
// again, even when the outbox is replayed or a partition moves. The
// ledger keeps a hash of each payload: a key read again with another
// payload is a conflict, dead-lettered (class "conflict"), never skipped
// as settled nor sent under that key. Before each attempt to a sink that
// is not Idempotent, the attempt is recorded: a runner killed while it
// was out leaves it unknown, parked, not re-sent.
// Dead letters go to "<application id>-sink-<name>-dlq" with the headers
// onceflow-idempotency-key (HeaderIdempotencyKey), onceflow-sink-error,
// onceflow-sink-attempts, onceflow-sink-class, onceflow-source (the input
// record, "topic/partition/offset") and onceflow-sink-outbox (the outbox
// record); onceflow dlq lists, shows and redrives them.
//
// # The fence
//
// A runner that its group evicted (stalled, stopped, cut off from the
// coordinator) stops starting attempts, but an attempt already out can
// reach the downstream after the partition's new owner has delivered.
// Every Delivery carries a Fence, higher for every later owner of the
// outbox partition. A sink that is not idempotent must check it: keep the
// highest fence per outbox partition where the effect is applied, refuse
// a lower one with an error wrapping ErrFenced, and apply no effect of a
// lower fence once a higher one was admitted (FenceGuard does this in
// memory, for a downstream every runner reaches; sinks/pgsink does it in
// the effect's own database transaction). The runner takes ErrFenced as
// proof that it is the zombie: it records nothing for that delivery, ends
// its session and joins its group again; the owner delivers it. An
// idempotent sink needs the fence only to keep a zombie's stale write
// from landing after the owner's.
//
// # Metrics
//
// With a prometheus.Registerer (processor.Config.Registerer), labelled app
// and instance, every series of every sink starting at zero:
//
//	onceflow_sink_deliveries_total{sink,outcome}  deliveries settled: succeeded, dead-lettered, unknown, skipped (settled before)
//	onceflow_sink_retries_total{sink}             attempts that failed and were retried
//	onceflow_sink_backlog{sink}                   deliveries read from the outbox, not settled yet
//	onceflow_sink_dead_letters_total{sink}        deliveries written to the dead-letter topic
//	onceflow_sink_unknown{sink}                   deliveries parked as unknown in the ledgers this runner holds
//	onceflow_sink_delivery_seconds{sink}          time of one attempt (histogram)
//	onceflow_sink_ledger_stale_entries_total{sink} ledger entries a restore skipped: written after another runner's fence
package sinks

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Delivery is one request to an external system.
type Delivery struct {
	// Sink is the sink's name in the topology.
	Sink string
	// IdempotencyKey is the same on every attempt, replica and crash: a
	// downstream that keeps it applies the effect once.
	IdempotencyKey string
	// Payload is the encoded payload the topology wrote.
	Payload []byte
	// Source names the input record the delivery descends from
	// ("topic/partition/offset").
	Source string
	// Attempt counts the attempts, from 1.
	Attempt int
	// Fence lets a downstream refuse a late write of a runner that lost
	// the outbox partition (a zombie): see Fence and FenceGuard.
	Fence Fence
	// Requested is when the topology wrote the delivery request.
	Requested time.Time
}

// Sink applies deliveries. Deliver returns nil once the effect is applied
// (or was already applied under the same idempotency key). An error is
// classified (see Classify): transient errors are retried, permanent ones
// dead-lettered, unknown outcomes parked unless the sink is idempotent.
// Deliver must honour ctx: the runner bounds each attempt with it.
type Sink interface {
	Deliver(ctx context.Context, d Delivery) error
}

// Func adapts a function to a Sink. A Func is not Idempotent, so it must
// check the fence where its effect is applied (see FenceGuard).
type Func func(ctx context.Context, d Delivery) error

// Deliver calls f.
func (f Func) Deliver(ctx context.Context, d Delivery) error { return f(ctx, d) }

// Idempotent is implemented by a sink that states whether re-sending a
// delivery under the same idempotency key is safe (the downstream keeps
// the key and applies the effect once). A sink without it is taken as not
// idempotent: an attempt whose outcome is unknown is then parked, never
// re-sent automatically (RFC 9110, 9.2.2).
type Idempotent interface {
	Idempotent() bool
}

// Class says what becomes of a failed attempt.
type Class int

const (
	// Transient: retried after a backoff, until the retry budget is spent
	// (then dead-lettered).
	Transient Class = iota
	// Permanent: dead-lettered at once.
	Permanent
	// Unknown: the request may or may not have been applied (it went out
	// and no answer came back). Re-sent under the same key to an
	// idempotent sink; parked as unknown otherwise.
	Unknown
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Error is a classified delivery failure.
type Error struct {
	Class Class
	// RetryAfter, when positive, is the least wait before the next
	// attempt the downstream asked for (an HTTP Retry-After).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string { return fmt.Sprintf("sinks: %s: %v", e.Class, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// TransientError marks err as worth retrying, after at least retryAfter
// (zero: the backoff alone decides).
func TransientError(err error, retryAfter time.Duration) error {
	return &Error{Class: Transient, RetryAfter: retryAfter, Err: err}
}

// PermanentError marks err as never going to succeed.
func PermanentError(err error) error { return &Error{Class: Permanent, Err: err} }

// UnknownError marks an attempt whose outcome cannot be known.
func UnknownError(err error) error { return &Error{Class: Unknown, Err: err} }

// Classify returns the class of a Deliver error: the class of a *Error in
// its chain; Unknown for a deadline that expired while the attempt was
// out (context.DeadlineExceeded); Transient for anything else.
func Classify(err error) (Class, time.Duration) {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Class, e.RetryAfter
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Unknown, 0
	}
	return Transient, 0
}
