// Package wire is what onceflow writes that other programs read: the
// header names of outputs, rejected records, outboxes and dead letters,
// the rejection reasons, and the partitioner that keys records to
// partitions. Each is defined here once; the runtime, the topology test
// driver and the tools use these names, and the public packages re-export
// the ones users read (topologytest, sinks). It is a leaf: it imports
// nothing of the module.
package wire

// Headers of outputs and rejected records.
const (
	// HeaderSource is the lineage of a record: "topic/partition/offset" of
	// the input record it descends from, or "punctuator/<stage>/<task>"
	// for one a punctuation wrote. Repartition and through topics carry it
	// on, so an output names the record first consumed.
	HeaderSource = "onceflow-source"
	// HeaderRejectReason is a rejected record's reason (Reason*, or a
	// gate's own).
	HeaderRejectReason = "onceflow-reject-reason"
	// HeaderRejectError is the error that rejected the record.
	HeaderRejectError = "onceflow-reject-error"
	// HeaderRejectNode is the gate or stage that rejected the record;
	// absent for the runtime's own reasons.
	HeaderRejectNode = "onceflow-reject-node"
	// HeaderRejectedRecord says what a rejected record is when it is not
	// the input record: RejectedWindowResult for a window's final result.
	HeaderRejectedRecord = "onceflow-reject-record"
	// HeaderWindowStart and HeaderWindowEnd are a rejected window result's
	// bounds, in milliseconds since the epoch, as decimal text.
	HeaderWindowStart = "onceflow-window-start"
	HeaderWindowEnd   = "onceflow-window-end"
	// HeaderRejectTruncated marks a rejected record that was cut to fit
	// the rejected topic. Its value lists what was cut, with the original
	// sizes: "value=<bytes>", then ",headers=<count>" and ",key=<bytes>"
	// when those had to go too.
	HeaderRejectTruncated = "onceflow-reject-truncated"
)

// RejectedWindowResult is HeaderRejectedRecord's value for a window's
// final result.
const RejectedWindowResult = "window-result"

// Headers of outbox and dead-letter records (the external sinks).
const (
	// HeaderIdempotencyKey carries a delivery's idempotency key, on
	// outbox and dead-letter records.
	HeaderIdempotencyKey = "onceflow-idempotency-key"
	// HeaderSinkError is the last error of a dead-lettered delivery.
	HeaderSinkError = "onceflow-sink-error"
	// HeaderSinkAttempts is how many attempts a dead-lettered delivery had.
	HeaderSinkAttempts = "onceflow-sink-attempts"
	// HeaderSinkClass is the class of the last error of a dead-lettered
	// delivery.
	HeaderSinkClass = "onceflow-sink-class"
	// HeaderSinkOutbox names the outbox record of a dead-lettered delivery
	// ("topic/partition/offset").
	HeaderSinkOutbox = "onceflow-sink-outbox"
	// HeaderSinkCommand marks an outbox record as a command to the sink
	// runner rather than a new delivery request: SinkCommandRedrive or
	// SinkCommandResolve, for the delivery whose idempotency key the record
	// carries (onceflow dlq redrive, onceflow sinks unknown resolve). The
	// record carries the delivery's payload and record key too.
	HeaderSinkCommand = "onceflow-sink-command"
	// HeaderSinkResolveAs is the outcome a resolve command gives a parked
	// delivery: SinkResolveSucceeded, SinkResolveFailed or SinkResolveRetry.
	HeaderSinkResolveAs = "onceflow-sink-resolve-as"
)

// Commands to the sink runner (HeaderSinkCommand values) and the outcomes
// a resolve gives (HeaderSinkResolveAs values).
const (
	// SinkCommandRedrive delivers a dead-lettered delivery again, under
	// its idempotency key, with a fresh retry budget.
	SinkCommandRedrive = "redrive"
	// SinkCommandResolve settles a delivery parked as unknown.
	SinkCommandResolve = "resolve"
	// SinkResolveSucceeded: the effect happened; never sent again.
	SinkResolveSucceeded = "succeeded"
	// SinkResolveFailed: it did not happen and must not; dead-lettered.
	SinkResolveFailed = "failed"
	// SinkResolveRetry: it did not happen; sent again under the same key.
	SinkResolveRetry = "retry"
)

// Rejection reasons of the runtime.
const (
	// ReasonUndecodable: the source's codecs refused the record.
	ReasonUndecodable = "undecodable"
	// ReasonProcessingError: a node failed on the record.
	ReasonProcessingError = "processing-error"
	// ReasonTooLarge: one of the record's outputs or state changes is
	// larger than the topics it goes to accept.
	ReasonTooLarge = "too-large"
	// ReasonTimestampOutOfRange: one of the record's outputs carries a
	// timestamp a topic it goes to refuses (beyond the topic's
	// message.timestamp.after.max.ms or before.max.ms of the wall clock).
	ReasonTimestampOutOfRange = "timestamp-out-of-range"
)

// Rejection reasons of the built-in gates and windows.
const (
	ReasonDuplicate = "duplicate"
	ReasonConflict  = "conflict"
	ReasonStale     = "stale"
	// ReasonLate: the record arrived after every window it belongs to
	// closed.
	ReasonLate = "late"
	// ReasonInvalidTimestamp: the record has no timestamp (Kafka's -1) or
	// one before the epoch, so no window holds it.
	ReasonInvalidTimestamp = "invalid-timestamp"
	// ReasonFutureTimestamp: the record is stamped beyond the wall clock
	// plus the allowed clock skew.
	ReasonFutureTimestamp = "future-timestamp"
)
