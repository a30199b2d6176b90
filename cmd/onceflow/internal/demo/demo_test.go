package demo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/demo"
)

// readLog returns the log of the replica process name.
func readLog(t *testing.T, dir, name string) string {
	t.Helper()
	file := strings.ReplaceAll(name, " (restarted)", "-restarted") + ".log"
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var restoredLine = regexp.MustCompile(`restored: .*records=([0-9]+)`)

// loggedRestores sums the records of a log's "restored" lines.
func loggedRestores(log string) int {
	n := 0
	for _, m := range restoredLine.FindAllStringSubmatch(log, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// A demo that fails (its replicas exit at once) or is cancelled (Ctrl-C)
// leaves nothing in the temporary folder.
func TestDemoCleansUp(t *testing.T) {
	sleeper := filepath.Join(t.TempDir(), "sleeper")
	if err := os.WriteFile(sleeper, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		exe  string
		want error
	}{
		{"replicas fail", "/bin/false", nil},
		{"cancelled", sleeper, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			res, err := demo.Run(ctx, demo.Config{Records: 1000, Executable: tc.exe, TempDir: tmp})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want an error (%v)", err, tc.want)
			}
			t.Log(err)
			left, rerr := os.ReadDir(tmp)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if len(left) != 0 || res.LogDir != "" {
				t.Fatalf("left behind in the temporary folder: %v (log dir %q)", left, res.LogDir)
			}
		})
	}
}
