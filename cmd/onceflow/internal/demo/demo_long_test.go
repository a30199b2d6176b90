//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package demo_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/demo"
)

// The demo end to end with the real CLI binary: three replica processes,
// the one owning the most partitions killed with SIGKILL while input is
// arriving and restarted once its partitions moved, checked against the
// truth. What the demo reports about the kill and the restores is checked
// against the replicas' own logs.
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
	const records = 20000
	res, err := demo.Run(ctx, demo.Config{Records: records, Executable: exe, TempDir: t.TempDir(), KeepLogs: true,
		PG: os.Getenv("ONCEFLOW_PG_DSN")})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	t.Logf("%+v", res)
	if !res.ExactlyOnce {
		t.Errorf("exactly-once did not hold: %+v", res)
	}
	if res.RecordsIn != records || res.Missing != 0 || res.Duplicates != 0 || res.Unexpected != 0 {
		t.Errorf("counts: %+v", res)
	}
	// One effect per accepted event at the webhook receiver, none twice,
	// and one row per accepted event when PostgreSQL is there.
	if res.SinkEffects != res.EventsAccepted || res.EventsAccepted == 0 || res.SinkDuplicateEffects != 0 {
		t.Errorf("sink effects %d for %d accepted events, %d duplicate effects", res.SinkEffects, res.EventsAccepted, res.SinkDuplicateEffects)
	}
	if res.SinkRequests <= res.SinkEffects {
		t.Errorf("%d requests for %d effects: the receiver's misbehaviour caused no retry", res.SinkRequests, res.SinkEffects)
	}
	if dsn := os.Getenv("ONCEFLOW_PG_DSN"); dsn != "" && (!res.Postgres || res.PostgresRows != res.EventsAccepted) {
		t.Errorf("postgres used %t, %d rows for %d accepted events", res.Postgres, res.PostgresRows, res.EventsAccepted)
	}
	if res.DuplicatesRejected != res.DuplicatesInjected || res.DuplicatesInjected == 0 ||
		res.ConflictsRejected != res.ConflictsInjected || res.ConflictsInjected == 0 ||
		res.StaleRejected != res.StaleInjected || res.StaleInjected == 0 || !res.TotalsMatch {
		t.Errorf("gates: %+v", res)
	}

	// The victim owned partitions and had processed records when it was
	// killed, and input was still arriving.
	if res.Killed == "" || res.KilledPartitions == 0 || res.KilledRecordsIn == 0 {
		t.Errorf("the killed replica %q owned %d partitions and had processed %d records", res.Killed, res.KilledPartitions, res.KilledRecordsIn)
	}
	if res.InputAtKill >= records {
		t.Errorf("all %d input records were written before the kill", res.InputAtKill)
	}
	victimLog := readLog(t, res.LogDir, res.Killed)
	// Under the cooperative assignor a replica may start its session with
	// no tasks and be given them later, within the session.
	claims := regexp.MustCompile(`(session started|task claimed|generation changed): .*claims="[^"]*\[[0-9 ]+\]"`).FindAllString(victimLog, -1)
	processed := regexp.MustCompile(`stopped: ([0-9]+) in`).FindString(victimLog)
	if len(claims) == 0 || processed != "" {
		t.Errorf("the victim's log shows no session with partitions (%q) or a clean stop (%q)", claims, processed)
	}

	// The restore counts reported are the ones each replica process
	// logged, and the partitions that moved were restored somewhere.
	if len(res.RestoredBy) != res.Replicas+1 {
		t.Errorf("restores reported for %v, want each of %d replica processes", res.RestoredBy, res.Replicas+1)
	}
	sum, survivors := 0, 0
	for name, n := range res.RestoredBy {
		if logged := loggedRestores(readLog(t, res.LogDir, name)); logged != n {
			t.Errorf("%s: reported %d restored, its log says %d", name, n, logged)
		}
		sum += n
		if name != res.Killed && !strings.HasSuffix(name, "(restarted)") {
			survivors += n
		}
	}
	if sum != res.RestoredRecords {
		t.Errorf("restored_records %d, the replicas' sum %d", res.RestoredRecords, sum)
	}
	if survivors == 0 {
		t.Errorf("the replicas that took over the killed one's partitions restored nothing: %v", res.RestoredBy)
	}

	// Pebble state is gone; only logs and the truth are kept.
	entries, err := os.ReadDir(res.LogDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("%s left in %s", e.Name(), res.LogDir)
		}
	}
}
