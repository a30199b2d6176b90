package demo_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/demo"
)

// The demo end to end with the real CLI binary: three replica processes,
// one killed with SIGKILL and restarted, checked against the truth.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs three replica processes")
	}
	exe := filepath.Join(t.TempDir(), "onceflow")
	build := exec.Command("go", "build", "-o", exe, "github.com/onceflow/onceflow/cmd/onceflow")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the CLI: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := demo.Run(ctx, demo.Config{Records: 20000, Executable: exe})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	t.Logf("%+v", res)
	if !res.ExactlyOnce {
		t.Errorf("exactly-once did not hold: %+v", res)
	}
	if res.RecordsIn != 20000 || res.Missing != 0 || res.Duplicates != 0 || res.Unexpected != 0 {
		t.Errorf("counts: %+v", res)
	}
	if res.DuplicatesRejected != res.DuplicatesInjected || res.DuplicatesInjected == 0 ||
		res.ConflictsRejected != res.ConflictsInjected || res.ConflictsInjected == 0 ||
		res.StaleRejected != res.StaleInjected || res.StaleInjected == 0 || !res.TotalsMatch {
		t.Errorf("gates: %+v", res)
	}
	if res.Killed == "" {
		t.Errorf("no replica was killed")
	}
}
