//go:build long

// The scenarios end to end at small sizes, with the real CLI binary:
// make test-long runs them, make test does not.

package scenario_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/scenario"
)

var build struct {
	once sync.Once
	dir  string
	exe  string
	err  error
	out  []byte
}

// cli builds the onceflow binary once for the package's tests.
func cli(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "onceflow-scenario-test-")
		if build.err != nil {
			return
		}
		build.exe = filepath.Join(build.dir, "onceflow")
		build.out, build.err = exec.Command("go", "build", "-o", build.exe, "github.com/onceflow/onceflow/cmd/onceflow").CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("build the CLI: %v\n%s", build.err, build.out)
	}
	return build.exe
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// run runs scenario name and returns its output.
func run(t *testing.T, name string, cfg scenario.Config) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out strings.Builder
	cfg.Executable, cfg.WorkDir, cfg.Out = cli(t), t.TempDir(), &out
	err := scenario.Run(ctx, name, cfg)
	t.Logf("%s:\n%s", name, out.String())
	return out.String(), err
}

// The lines the benchmarks' restore step reads (benchmarks/targets.go).
var (
	coldRe = regexp.MustCompile(`(?m)^cold restore: (\d+) changelog records in ([0-9.]+) s to ready .* = (\d+) records/s`)
	killRe = regexp.MustCompile(`r3 back: restored (\d+) changelog records; kill -> exit ([0-9.]+) s, restart -> ready ([0-9.]+) s, kill -> ready ([0-9.]+) s`)
	okRe   = regexp.MustCompile(`(?m)^\{.*"ok":true`)
)

func TestScenarioOrders(t *testing.T) {
	out, err := run(t, "orders", scenario.Config{Records: 3000, Kills: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(killRe.FindAllString(out, -1)); n != 2 {
		t.Errorf("%d kill lines, want 2", n)
	}
	if m := coldRe.FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Errorf("no cold restore line with records restored: %v", m)
	}
	if !okRe.MatchString(out) {
		t.Error("no verify report with ok true")
	}
}

func TestScenarioPageviews(t *testing.T) {
	out, err := run(t, "pageviews", scenario.Config{Records: 3000, Kills: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(killRe.FindAllString(out, -1)); n != 1 {
		t.Errorf("%d kill lines, want 1", n)
	}
	if !regexp.MustCompile(`(?m)^r1: late rejections \d+$`).MatchString(out) || !okRe.MatchString(out) {
		t.Error("no late rejections of r1 or no verify report with ok true")
	}
}

func TestScenarioPoison(t *testing.T) {
	out, err := run(t, "poison", scenario.Config{Records: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\nok: "); n != 9 || strings.Contains(out, "FAILED") {
		t.Errorf("%d checks ok, want 9 and none failed", n)
	}
}

// The poison scenario's session check fails when no session is allowed:
// its checks can fail, and a failure is ErrCheckFailed.
func TestScenarioPoisonCheckFails(t *testing.T) {
	out, err := run(t, "poison", scenario.Config{Records: 200, MaxSessions: -1})
	if !errors.Is(err, scenario.ErrCheckFailed) {
		t.Fatalf("error %v, want ErrCheckFailed", err)
	}
	if n := strings.Count(out, "\nFAILED: "); n != 3 {
		t.Errorf("%d checks failed, want the 3 session checks", n)
	}
}

func TestScenarioCLI(t *testing.T) {
	out, err := run(t, "cli", scenario.Config{Records: 3000, Kills: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`throughput exactly_once: 3000 records in [0-9.]+ s = \d+ records/s`,
		`throughput at_least_once: 3000 records in [0-9.]+ s = \d+ records/s`,
		`exactly_once / at_least_once = [0-9.]+`,
		`chaos: read_committed: 3000 records, 3000 distinct values \(input 3000\)`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no line %q", re)
		}
	}
	if n := strings.Count(out, "chaos: killed r3"); n != 2 {
		t.Errorf("%d kills, want 2", n)
	}
}
