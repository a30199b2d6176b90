package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/onceflow/onceflow/internal/kafka"
)

// Transactions that fail on the same input because the producer's
// transaction was no longer open (sarama's "transaction is not ready",
// seen after the coordinator aborted a transaction past its timeout on an
// overloaded cluster) do not stop the replica: the input is not at fault.
// A failure that may be the input's still does, at the bound.
func TestRepeatsIgnoreATransactionNotOpen(t *testing.T) {
	starts := map[string]map[int32]int64{"in": {0: 42}}
	var r repeats
	notReady := fmt.Errorf("kafka: produce to out/5: %w", kafka.ErrTxnNotReady)
	for i := range 2 * RepeatBound {
		if err := r.failed(starts, "produce", notReady); err != nil {
			t.Fatalf("failure %d (transaction not open) stopped the replica: %v", i+1, err)
		}
	}
	var err error
	for range RepeatBound {
		err = r.failed(starts, "produce", errors.New("kafka: produce to out/5: record too large"))
	}
	if !errors.Is(err, ErrRepeatedFailure) {
		t.Errorf("after %d failures that may be the input's: %v, want ErrRepeatedFailure", RepeatBound, err)
	}
}
