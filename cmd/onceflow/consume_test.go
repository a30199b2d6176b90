package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// onceflow consume prints a topic's records as JSON lines, and an
// application's rejected records with their reasons as fields.
func TestConsumeCommand(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in := `{"key": "o-1", "value_json": {"amount": 250}, "headers": {"event-id": "e-1"}}
{"key": "o-2", "value": "plain"}
`
	var out, errb syncBuffer
	if code := runIO(ctx, []string{"produce", "-b", brokers, "-t", "orders", "--from", "-"}, strings.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("produce: exit %d, %s", code, errb.String())
	}
	rejected := `{"key": "o-1", "value": "x", "headers": {"onceflow-reject-reason": "duplicate", "onceflow-reject-node": "dedup", "onceflow-source": "orders/0/0"}}
`
	if code := runIO(ctx, []string{"produce", "-b", brokers, "-t", "app-rejected", "--from", "-"}, strings.NewReader(rejected), &out, &errb); code != 0 {
		t.Fatalf("produce: exit %d, %s", code, errb.String())
	}

	// The two records may sit on different partitions, so which one comes
	// first is not fixed.
	code, stdout, stderr := cli(t, ctx, "consume", "-b", brokers, "-t", "orders", "--max", "1", "--value-format", "json")
	if code != exitOK || strings.Count(stdout, "\n") != 1 {
		t.Errorf("consume --max 1: exit %d, stdout %q, stderr %q; want one line", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, ctx, "consume", "-b", brokers, "-t", "orders", "--value-format", "json")
	want := `"headers":{"event-id":"e-1"},"key":"o-1","value":{"amount":250}}`
	if code != exitOK || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, want) {
		t.Errorf("consume --value-format json: exit %d, stdout %q, stderr %q; want two lines, one with %s", code, stdout, stderr, want)
	}
	code, stdout, _ = cli(t, ctx, "consume", "-b", brokers, "-t", "orders")
	if code != exitOK || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, `"value":"plain"`) {
		t.Errorf("consume: exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = cli(t, ctx, "consume", "-b", brokers, "--rejected", "app")
	if code != exitOK || !strings.Contains(stdout, `"reason":"duplicate","node":"dedup"`) || !strings.Contains(stdout, `"source":"orders/0/0"`) {
		t.Errorf("consume --rejected: exit %d, stdout %q", code, stdout)
	}
	for _, args := range [][]string{
		{"consume", "-b", brokers},
		{"consume", "-b", brokers, "-t", "orders", "--rejected", "app"},
		{"consume", "-b", brokers, "-t", "nope"},
		{"consume", "-b", brokers, "-t", "orders", "--from", "yesterday"},
	} {
		if code, _, stderr := cli(t, ctx, args...); code != exitError || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args[2:], code, stderr)
		}
	}
}
