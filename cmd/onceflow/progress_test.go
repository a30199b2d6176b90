package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// produce draws no progress bar when stderr is not a terminal (here a
// buffer): no carriage-return frames in a pipe or a log file.
func TestProduceDrawsNoBarOffTerminal(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, stdout, stderr := cli(t, ctx, "produce", "-b", brokers, "-t", "in", "-n", "2000")
	if code != exitOK || !strings.Contains(stdout, "produced 2000 records") {
		t.Fatalf("produce: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if strings.Contains(stderr, "\r") {
		t.Errorf("stderr has progress-bar frames: %q", stderr)
	}
}
