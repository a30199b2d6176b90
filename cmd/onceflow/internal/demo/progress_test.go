package demo_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/demo"
)

// With PlainProgress (stderr is not a terminal) the demo writes its step
// lines and no progress-bar frames (carriage-return redraws); without it,
// the same run draws them.
func TestDemoPlainProgressHasNoBarFrames(t *testing.T) {
	sleeper := filepath.Join(t.TempDir(), "sleeper")
	if err := os.WriteFile(sleeper, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, plain := range []bool{true, false} {
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		_, err := demo.Run(ctx, demo.Config{Records: 1000, Executable: sleeper, TempDir: t.TempDir(), Progress: &out, PlainProgress: plain})
		cancel()
		if err == nil {
			t.Fatal("a demo whose replicas never commit succeeded")
		}
		frames := strings.Count(out.String(), "\r")
		if !strings.Contains(out.String(), "started 3 replicas") {
			t.Errorf("plain %t: no step lines: %q", plain, out.String())
		}
		if plain && frames != 0 {
			t.Errorf("plain progress has %d bar frames: %q", frames, out.String())
		}
		if !plain && frames == 0 {
			t.Errorf("progress on a terminal drew no bar: %q", out.String())
		}
	}
}
