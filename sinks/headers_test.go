package sinks_test

import (
	"testing"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/sinks"
)

// The public header names are the ones the runtime writes.
func TestHeaderNames(t *testing.T) {
	if sinks.HeaderIdempotencyKey != graph.HeaderIdempotencyKey || sinks.HeaderSource != kafka.SourceHeader {
		t.Errorf("header names drifted: %q/%q, %q/%q", sinks.HeaderIdempotencyKey, graph.HeaderIdempotencyKey, sinks.HeaderSource, kafka.SourceHeader)
	}
}
