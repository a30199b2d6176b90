//go:build long && (pg || !pg)

package scenario_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/scenario"
)

// The sinks scenario at a small size against the PostgreSQL of
// ONCEFLOW_PG_DSN (scripts/test-pg.sh sets it), with a receiver that also
// answers 5% of requests 400: those are dead letters, not effects.
func TestScenarioSinks(t *testing.T) {
	dsn := os.Getenv("ONCEFLOW_PG_DSN")
	if dsn == "" {
		t.Skip("needs PostgreSQL: ONCEFLOW_PG_DSN (scripts/test-pg.sh)")
	}
	out, err := run(t, "sinks", scenario.Config{Records: 2000, Kills: 2, PG: dsn, BadRequestRate: 0.05, Quiet: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\nok: "); n != 10 || strings.Contains(out, "FAILED") {
		t.Errorf("%d checks ok, want 10 and none failed", n)
	}
	if !regexp.MustCompile(`"dead-lettered":[1-9]`).MatchString(out) {
		t.Error("no dead letters with 5% of requests answered 400")
	}
}
