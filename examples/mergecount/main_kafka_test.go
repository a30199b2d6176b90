//go:build kafka

package main

import (
	"os"
	"strings"
	"testing"
)

// The same runs on a real broker: two and three replicas, one added and
// one killed with SIGKILL mid-run, every key's counts exact read back
// read_committed by franz-go and kcat.
func TestMergeCountReplicasAddedAndKilledOnRealKafka(t *testing.T) {
	addrs := os.Getenv("ONCEFLOW_KAFKA_BROKERS")
	if addrs == "" {
		t.Skip("needs a real broker: set ONCEFLOW_KAFKA_BROKERS (scripts/test-kafka.sh)")
	}
	mergeCountRuns(t, strings.Split(addrs, ","))
}
