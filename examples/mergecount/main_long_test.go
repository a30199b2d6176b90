//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package main

import (
	"testing"
)

// Every key's count over both topics is exact with two replicas, then a
// third added and the first killed mid-run; and the same from three.
func TestMergeCountReplicasAddedAndKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts replicas as processes")
	}
	mergeCountRuns(t, embeddedBroker(t))
}
