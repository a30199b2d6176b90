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

// recoveryBefore is the rule driver.fail applied inline before the
// failure policy had a function of its own: drop on an unknown outcome,
// fencing or a timed-out call; in exactly-once, abort an open or
// abortable transaction and drop a fatal or unknown one; in
// at-least-once, keep the drop only for a deadline or a timed-out call.
func recoveryBefore(exactlyOnce bool, state kafka.TxnState, err error) recovery {
	timedOut := errors.Is(err, kafka.ErrCallTimeout)
	drop := errors.Is(err, errUnknownOutcome) || kafka.IsFenced(err) || timedOut
	abort := false
	if exactlyOnce && !drop {
		switch state {
		case kafka.TxnOpen, kafka.TxnAbortable:
			abort = true
		case kafka.TxnFatal, kafka.TxnUnknown:
			drop = true
		}
	}
	if !exactlyOnce && !errors.Is(err, context.DeadlineExceeded) && !timedOut {
		drop = false
	}
	switch {
	case drop:
		return recoverDrop
	case abort:
		return recoverAbort
	}
	return recoverReset
}

// The failure policy decides as driver.fail did before it moved: for
// every delivery guarantee, producer state and combination of the error
// classes it looks at (and one it does not), the same recovery.
func TestRecoveryForKeepsTheRuleItReplaced(t *testing.T) {
	classes := []error{
		errUnknownOutcome,
		kafka.ErrProducerFenced,
		kafka.ErrCallTimeout,
		context.DeadlineExceeded,
		kafka.ErrTxnNotReady,
	}
	for _, eo := range []bool{true, false} {
		for state := kafka.TxnReady; state <= kafka.TxnUnknown; state++ {
			for mask := range 1 << len(classes) {
				err := errors.New("send failed")
				for i, c := range classes {
					if mask&(1<<i) != 0 {
						err = fmt.Errorf("%w: %w", err, c)
					}
				}
				if got, want := recoveryFor(eo, state, err), recoveryBefore(eo, state, err); got != want {
					t.Errorf("exactly once %v, state %v, %v: %v, before %v", eo, state, err, got, want)
				}
			}
		}
	}
}
