package engine

// The failure policy: how a failed transaction's producer is brought back.
// Kafka cannot take back a transaction's records; the producer either
// aborts it, or is dropped and created again with the same transactional
// id, which aborts it on the broker (InitProducerId).

import (
	"context"
	"errors"

	"github.com/onceflow/onceflow/internal/kafka"
)

// recovery is what a failed transaction's producer needs.
type recovery int

const (
	recoverReset recovery = iota // reset the producer: nothing is left to abort
	recoverAbort                 // abort the transaction, then reset; drop the producer when the abort fails
	recoverDrop                  // drop the producer; a new one aborts the transaction
)

func (r recovery) String() string {
	switch r {
	case recoverAbort:
		return "abort"
	case recoverDrop:
		return "drop"
	}
	return "reset"
}

// recoveryFor decides how the producer recovers from err, in transaction
// state (read before the failure was handled). A commit whose outcome is
// unknown, a fenced producer and a call past its deadline (sarama's call
// still holds the producer) drop it, as does a fatal or unknown state; an
// open or abortable transaction is aborted. An at-least-once producer with
// failed sends is reset by the rewind alone (the records are consumed and
// sent again), unless a call timed out.
func recoveryFor(exactlyOnce bool, state kafka.TxnState, err error) recovery {
	timedOut := errors.Is(err, kafka.ErrCallTimeout)
	drop := errors.Is(err, errUnknownOutcome) || kafka.IsFenced(err) || timedOut
	if !exactlyOnce {
		if drop && (timedOut || errors.Is(err, context.DeadlineExceeded)) {
			return recoverDrop
		}
		return recoverReset
	}
	if drop {
		return recoverDrop
	}
	switch state {
	case kafka.TxnOpen, kafka.TxnAbortable:
		return recoverAbort
	case kafka.TxnFatal, kafka.TxnUnknown:
		return recoverDrop
	}
	return recoverReset
}
