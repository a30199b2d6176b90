package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// `onceflow describe` prints the built-in topologies as their golden files
// hold them, as text and as Mermaid.
func TestDescribeCommand(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"describe-orders.txt", []string{"describe", "orders"}},
		{"describe-orders-sinks.mmd", []string{"describe", "orders", "--sinks", "--format", "mermaid"}},
		{"describe-allstages-sinks.txt", []string{"describe", "allstages", "--input", "allstages", "--sinks"}},
		{"describe-copy.mmd", []string{"describe", "copy", "--input", "in", "--output", "out", "--format", "mermaid"}},
	} {
		code, stdout, stderr := cli(t, context.Background(), tc.args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		want, err := os.ReadFile(filepath.Join("testdata", tc.golden))
		if err != nil {
			t.Fatal(err)
		}
		if stdout != string(want) {
			t.Errorf("%v:\n--- got\n%s--- want (%s)\n%s", tc.args, stdout, tc.golden, want)
		}
	}
	if code, _, _ := cli(t, context.Background(), "describe", "nope"); code != exitError {
		t.Errorf("describe nope: exit %d, want %d", code, exitError)
	}
}
