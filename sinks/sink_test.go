package sinks

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		err   error
		class Class
		after time.Duration
	}{
		{boom, Transient, 0},
		{TransientError(boom, 3*time.Second), Transient, 3 * time.Second},
		{fmt.Errorf("post: %w", PermanentError(boom)), Permanent, 0},
		{UnknownError(boom), Unknown, 0},
		{fmt.Errorf("attempt: %w", context.DeadlineExceeded), Unknown, 0},
	} {
		c, after := Classify(tc.err)
		if c != tc.class || after != tc.after {
			t.Errorf("Classify(%v) = %v %v, want %v %v", tc.err, c, after, tc.class, tc.after)
		}
	}
	if !errors.Is(PermanentError(boom), boom) {
		t.Error("a classified error does not unwrap to its cause")
	}
}
