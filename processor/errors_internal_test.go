package processor

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/kafka"
)

// Run's errors match their public kind, say whether they are retryable,
// and carry the prefix on every line.
func TestPublicErrors(t *testing.T) {
	for _, tc := range []struct {
		in        error
		kind      error
		retryable bool
	}{
		{fmt.Errorf("engine: %w: dial tcp: refused", kafka.ErrUnreachable), ErrUnreachable, true},
		{fmt.Errorf("engine: %w", errors.Join(fmt.Errorf("input topic %q does not exist (%w)", "a", kafka.ErrTopicMissing), errors.New("second problem"))), ErrTopicMissing, false},
		{fmt.Errorf("engine: %w", kafka.ErrFencedInstance), ErrInstanceFenced, false},
		{fmt.Errorf("%w: in/0/12", engine.ErrRepeatedFailure), ErrRepeatedFailure, false},
		{fmt.Errorf("%w (19s)", engine.ErrStopTimeout), ErrStopTimeout, true},
		{fmt.Errorf("%w: task 0_1 was given ma[1] without mb[1]", engine.ErrTaskSplit), ErrTaskSplit, false},
		{fmt.Errorf("engine: dead-letter topic: %w: topic \"shop-sink-hook-dlq\" has retention.ms=604800000", kafka.ErrExpiring), ErrRetention, false},
		{errors.New("something else"), nil, false},
	} {
		err := publicError(tc.in)
		if tc.kind != nil && !errors.Is(err, tc.kind) {
			t.Errorf("%q does not match %v", err, tc.kind)
		}
		if !errors.Is(err, tc.in) {
			t.Errorf("%q does not unwrap to its cause", err)
		}
		if got := Retryable(err); got != tc.retryable {
			t.Errorf("Retryable(%q) = %v, want %v", err, got, tc.retryable)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "processor: ") {
				t.Errorf("line %q of %q lacks the prefix", line, err)
			}
		}
	}
	if publicError(nil) != nil {
		t.Error("publicError(nil) is not nil")
	}
}
