package verify_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// outcomeCheck returns a check of spec against e's brokers: each call reads
// the topics again, logs the report under what, and returns it.
func outcomeCheck(t *testing.T, e *enginetest.Env, spec verify.Spec) func(what string) verify.OutcomeReport {
	return func(what string) verify.OutcomeReport {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rep, err := verify.Outcomes(ctx, e.Brokers, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", what, rep)
		return rep
	}
}
