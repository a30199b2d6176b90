package wire

import "testing"

// The names are on the wire: records already in topics, other programs
// and older replicas read them, so none may change.
func TestNamesStayStable(t *testing.T) {
	for got, want := range map[string]string{
		HeaderSource:              "onceflow-source",
		HeaderRejectReason:        "onceflow-reject-reason",
		HeaderRejectError:         "onceflow-reject-error",
		HeaderRejectNode:          "onceflow-reject-node",
		HeaderRejectedRecord:      "onceflow-reject-record",
		HeaderWindowStart:         "onceflow-window-start",
		HeaderWindowEnd:           "onceflow-window-end",
		HeaderRejectTruncated:     "onceflow-reject-truncated",
		RejectedWindowResult:      "window-result",
		HeaderIdempotencyKey:      "onceflow-idempotency-key",
		HeaderSinkError:           "onceflow-sink-error",
		HeaderSinkAttempts:        "onceflow-sink-attempts",
		HeaderSinkClass:           "onceflow-sink-class",
		HeaderSinkOutbox:          "onceflow-sink-outbox",
		HeaderSinkCommand:         "onceflow-sink-command",
		HeaderSinkResolveAs:       "onceflow-sink-resolve-as",
		SinkCommandRedrive:        "redrive",
		SinkCommandResolve:        "resolve",
		SinkResolveSucceeded:      "succeeded",
		SinkResolveFailed:         "failed",
		SinkResolveRetry:          "retry",
		ReasonUndecodable:         "undecodable",
		ReasonProcessingError:     "processing-error",
		ReasonTooLarge:            "too-large",
		ReasonTimestampOutOfRange: "timestamp-out-of-range",
		ReasonDuplicate:           "duplicate",
		ReasonConflict:            "conflict",
		ReasonStale:               "stale",
		ReasonLate:                "late",
		ReasonInvalidTimestamp:    "invalid-timestamp",
		ReasonFutureTimestamp:     "future-timestamp",
	} {
		if got != want {
			t.Errorf("%q changed; it was %q", got, want)
		}
	}
}
