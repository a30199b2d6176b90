//go:build kafka

package app_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The kit's run and verify against a real Kafka broker
// (ONCEFLOW_KAFKA_BROKERS), on topics and an application id of their own.
func TestRunThenVerifyOnRealKafka(t *testing.T) {
	addrs := os.Getenv("ONCEFLOW_KAFKA_BROKERS")
	if addrs == "" {
		t.Skip("ONCEFLOW_KAFKA_BROKERS is not set")
	}
	runThenVerify(t, strings.Split(addrs, ","), fmt.Sprintf("app-%d-", time.Now().UnixNano()))
}
