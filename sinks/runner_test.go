package sinks_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/sinks"
)

func TestRunnerConfigValidate(t *testing.T) {
	if err := (sinks.RunnerConfig{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	err := sinks.RunnerConfig{MaxAttempts: -1, AttemptTimeout: -time.Second, BackoffBase: time.Minute, BackoffCap: time.Second}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"MaxAttempts", "AttemptTimeout", "BackoffBase"} {
		if !contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
