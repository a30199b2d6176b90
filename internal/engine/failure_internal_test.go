package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/onceflow/onceflow/internal/kafka"
)

// The failure policy recovers a failed transaction's producer without a
// broker: it drops it when the outcome is unknown, it is fenced, a call
// timed out or its state is fatal or unknown; aborts an open or abortable
// transaction; resets otherwise; and an at-least-once producer is reset
// unless a call ran past its deadline.
func TestRecoveryFor(t *testing.T) {
	failed := errors.New("send failed")
	unknown := fmt.Errorf("%w: coordinator gone", errUnknownOutcome)
	fenced := fmt.Errorf("commit: %w", kafka.ErrProducerFenced)
	timedOut := fmt.Errorf("commit: %w", kafka.ErrCallTimeout)
	deadline := fmt.Errorf("flush: %w", context.DeadlineExceeded)
	for _, tc := range []struct {
		exactlyOnce bool
		state       kafka.TxnState
		err         error
		want        recovery
	}{
		{true, kafka.TxnOpen, failed, recoverAbort},
		{true, kafka.TxnAbortable, failed, recoverAbort},
		{true, kafka.TxnReady, failed, recoverReset},
		{true, kafka.TxnFatal, failed, recoverDrop},
		{true, kafka.TxnUnknown, failed, recoverDrop},
		{true, kafka.TxnOpen, unknown, recoverDrop},
		{true, kafka.TxnAbortable, fenced, recoverDrop},
		{true, kafka.TxnReady, timedOut, recoverDrop},
		{true, kafka.TxnOpen, deadline, recoverAbort},
		{false, kafka.TxnReady, failed, recoverReset},
		{false, kafka.TxnReady, deadline, recoverReset},
		{false, kafka.TxnReady, fenced, recoverReset},
		{false, kafka.TxnReady, fmt.Errorf("%w: %w", fenced, context.DeadlineExceeded), recoverDrop},
		{false, kafka.TxnReady, timedOut, recoverDrop},
	} {
		if got := recoveryFor(tc.exactlyOnce, tc.state, tc.err); got != tc.want {
			t.Errorf("exactly once %v, state %v, %v: %v, want %v", tc.exactlyOnce, tc.state, tc.err, got, tc.want)
		}
	}
}
