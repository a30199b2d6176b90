package engine_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// kcat (librdkafka), a client no one here wrote, reads the output
// read_committed and must agree with our verifier: as many records as the
// input, every value once.
func TestKcatReadCommittedAgrees(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (scripts/install-kcat.sh installs it)")
	}
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 6)
	g := compile(t, copyex.Topology(in, out))
	load := startLoad(env, in, 0, 500)
	r1 := env.Start(env.Config(app, "r1"), g)
	r2 := env.Start(env.Config(app, "r2"), g)
	waitFor(t, "traffic", 60*time.Second, func() bool { return r1.E.Stats().RecordsIn > 2000 })
	r1.Crash()
	r1 = env.Start(env.Config(app, "r1"), g)
	n := load.finish()
	env.WaitCount(out, n, 120*time.Second)
	r1.Stop()
	r2.Stop()
	env.Verify(in, out)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-C", "-b", strings.Join(env.Brokers, ","), "-t", out,
		"-X", "isolation.level=read_committed", "-o", "beginning", "-e", "-q", "-f", "%s\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat: %v: %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n")
	distinct := map[string]bool{}
	for _, l := range lines {
		distinct[l] = true
	}
	if len(lines) != n || len(distinct) != n {
		t.Errorf("kcat read %d records (%d distinct values) read_committed, want %d", len(lines), len(distinct), n)
	}
	t.Logf("kcat: %d records, %d distinct; input %d", len(lines), len(distinct), n)
}
