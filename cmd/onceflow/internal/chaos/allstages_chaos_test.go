//go:build chaos

package chaos_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/chaos"
)

// A short chaos run of the allstages topology on the embedded broker:
// every kind of stage, its two sinks delivered to the run's receiver that
// is not idempotent, under an operator-command fault (resolve and
// redrive, then SIGKILL), a pause past the session timeout (a zombie
// replica and a zombie sink runner) and a replica kill: one round of the
// deck, about 25 s, within the 30 s of faults (TestChaosEmbedded deals
// the network and request faults). Every output, window and effect must be
// there once.
//
// It runs with the build tag chaos (go test -tags chaos -run
// TestChaosAllStagesEmbedded ./internal/chaos), not in `make test`: under
// a minute when it holds (the settling, in batches, takes seconds), three
// when the settling waits for its timeout. The run must settle. A failure names the doubled effects with the fences of the two
// runners that sent them.
func TestChaosAllStagesEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and runs three replica processes under faults for about a minute")
	}
	exe := filepath.Join(t.TempDir(), "onceflow")
	build := exec.Command("go", "build", "-o", exe, "github.com/onceflow/onceflow/cmd/onceflow")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the CLI: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var progress strings.Builder
	faults := []string{chaos.FaultOperator, chaos.FaultReplicaPause, chaos.FaultReplicaKill}
	res, err := chaos.Run(ctx, chaos.Config{Embedded: true, Topology: chaos.TopologyAllStages, Duration: 30 * time.Second, Rate: 200, Seed: 5,
		Faults: faults, MinInterval: time.Second, MaxInterval: time.Second, DrainTimeout: 90 * time.Second, Executable: exe, WorkDir: t.TempDir(), Progress: &progress})
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	t.Logf("report:\n%s", res)
	a := res.AllStages
	if a == nil {
		t.Fatal("no allstages report")
	}
	if !res.OK || len(res.Violations) > 0 || !res.Settled || res.ParkedAtEnd != 0 {
		t.Errorf("violations: %v; settled %t, %d parked at the end", res.Violations, res.Settled, res.ParkedAtEnd)
	}
	if a.LineEffects.Expected == 0 || a.LineEffects.Seen != a.LineEffects.Expected || a.Windows.Seen != a.Windows.Expected || a.WallTicks == 0 || a.StreamTicks == 0 {
		t.Errorf("line effects %v, windows %v, %d wall-clock and %d stream-time ticks", a.LineEffects, a.Windows, a.WallTicks, a.StreamTicks)
	}
	if res.Receiver.Violations != 0 || res.Receiver.Answers["dropped"] == 0 || res.Resolved == 0 {
		t.Errorf("receiver %+v, %d resolved: want dropped answers resolved and no key applied twice", res.Receiver, res.Resolved)
	}
	if res.ReplicaKills < 1 || res.ReplicaPauses < 1 || res.OperatorFaults < 1 {
		t.Errorf("faults: %d kills, %d pauses, %d operator; want one of each", res.ReplicaKills, res.ReplicaPauses, res.OperatorFaults)
	}
}
