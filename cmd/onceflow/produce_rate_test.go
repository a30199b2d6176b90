package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestProduceRate(t *testing.T) {
	produceRateScenario(t, startBroker(t), "")
}

// produceRateScenario: produce --rate 400 writes 200 records spread over
// at least the 0.4975 s their pacing asks (record n at n/400 s), as the
// records' own timestamps show; a negative rate and --rate with --from
// are refused.
func produceRateScenario(t *testing.T, brokers, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := prefix + "paced"
	code, stdout, stderr := cli(t, ctx, "produce", "-b", brokers, "-t", topic, "-n", "200", "--partitions", "1", "--rate", "400")
	if code != exitOK || !strings.Contains(stdout, "produced 200 records to "+topic) {
		t.Fatalf("produce --rate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	recs := readCommitted(t, ctx, brokers, topic)
	if len(recs) != 200 {
		t.Fatalf("read %d records, want 200", len(recs))
	}
	// Timestamps are milliseconds: 199/400 s is 497.5 ms.
	if spread := recs[199].Timestamp.Sub(recs[0].Timestamp); spread < 497*time.Millisecond {
		t.Errorf("200 records at 400/s written within %v", spread)
	}
	code, _, stderr = cli(t, ctx, "produce", "-b", brokers, "-t", topic, "-n", "10", "--rate=-1")
	if code != exitError || !strings.Contains(stderr, "--rate must be a finite number, not negative") {
		t.Errorf("negative rate: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = cli(t, ctx, "produce", "-b", brokers, "-t", topic, "--from", "-", "--rate", "10")
	if code != exitError || !strings.Contains(stderr, "not with --from") {
		t.Errorf("--rate with --from: exit %d, stderr %q", code, stderr)
	}
}
