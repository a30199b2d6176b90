//go:build kafka

package main

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// kafkaBrokers is the real broker of ONCEFLOW_KAFKA_BROKERS, and a prefix
// that makes the test's topic and group names its own.
func kafkaBrokers(t *testing.T) (brokers, prefix string) {
	t.Helper()
	brokers = os.Getenv("ONCEFLOW_KAFKA_BROKERS")
	if brokers == "" {
		t.Skip("ONCEFLOW_KAFKA_BROKERS is not set")
	}
	return brokers, fmt.Sprintf("tools-%d-", time.Now().UnixNano())
}

func TestResetCommandOnRealKafka(t *testing.T) {
	brokers, prefix := kafkaBrokers(t)
	resetScenario(t, brokers, prefix)
}

func TestTopicsDeleteCommandOnRealKafka(t *testing.T) {
	brokers, prefix := kafkaBrokers(t)
	topicsDeleteScenario(t, brokers, prefix)
}

func TestProduceRateOnRealKafka(t *testing.T) {
	brokers, prefix := kafkaBrokers(t)
	produceRateScenario(t, brokers, prefix)
}
