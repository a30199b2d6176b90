package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Errors carry the command's name, not the internal package's that
// raised them.
func TestErrorsCarryTheCommandName(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		args       []string
		want, lose string
	}{
		{[]string{"lag", "-b", brokers, "-g", "g", "-t", "missing"}, "onceflow lag: ", "verify:"},
		{[]string{"produce", "-b", brokers, "-t", "bad topic!", "-n", "1"}, "onceflow produce: ", "gen:"},
		{[]string{"topics", "describe", "-b", brokers, "missing"}, "onceflow topics describe: ", "topics:"},
	} {
		code, _, stderr := cli(t, ctx, tc.args...)
		if code != exitError || !strings.HasPrefix(stderr, tc.want) || strings.Contains(stderr, tc.lose) {
			t.Errorf("%v: exit %d, stderr %q, want it to start %q without %q", tc.args, code, stderr, tc.want, tc.lose)
		}
	}
}

// With --log-format json every line on stderr is a JSON object: a
// replica's log, its closing summary, and a command's last error.
func TestLogFormatJSONCoversSummaryAndError(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if code, _, stderr := cli(t, ctx, "topics", "create", "-b", brokers, "in"); code != exitOK {
		t.Fatalf("create: %s", stderr)
	}
	var out, errb syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--log-format", "json", "--log-level", "info", "run", "copy", "-b", brokers, "--input", "in", "--output", "out",
			"--app-id", "j", "--instance-id", "r1"}, &out, &errb)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), "replica starting") {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the replica did not start: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	summary := allJSON(t, errb.String())
	if last := summary[len(summary)-1]; !strings.Contains(last["@message"].(string), "r1 stopped") || last["records_in"] == nil {
		t.Errorf("the closing summary is not the last JSON line with its counts: %v", last)
	}

	code, _, stderr := cli(t, context.Background(), "--log-format", "json", "lag", "-b", brokers, "-g", "g", "-t", "missing")
	lines := allJSON(t, stderr)
	if last := lines[len(lines)-1]; code != exitError || last["@level"] != "error" || !strings.Contains(last["@message"].(string), `topic "missing" does not exist`) ||
		last["@module"] != "onceflow lag" {
		t.Errorf("the last error: exit %d, %v", code, last)
	}
}

// allJSON parses each line of s as a JSON object, failing on one that is
// not.
func allJSON(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q (%v)\n%s", l, err, s)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatal("nothing on stderr")
	}
	return out
}
