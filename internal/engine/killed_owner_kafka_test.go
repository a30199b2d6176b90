//go:build kafka && (cluster || !cluster)

// `make test-cluster` runs this file's tests on three brokers too: the tag
// marks the file for scripts/test-tagged.sh, the constraint always holds.

package engine_test

import (
	"os"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// A replica is killed with a transaction open while input flows; its task
// moves to another replica, which commits behind the dead transaction, and
// moves again (a clean stop) before the broker aborts it. A restore that
// read to the last stable offset stopped at the dead transaction and left
// out everything committed behind it: the counts came out short.
func TestKilledOwnerThenTwoMovesKeepCountsOnRealKafka(t *testing.T) {
	if os.Getenv("ONCEFLOW_KAFKA_BROKERS") == "" {
		t.Skip("needs a real broker: set ONCEFLOW_KAFKA_BROKERS (scripts/test-kafka.sh)")
	}
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	g := compile(t, plainCountTopology(in, out))
	start := func(name string) *enginetest.Replica {
		return env.Start(stateConfig(env, app, name, t.TempDir()), g)
	}
	load := startLoad(env, in, 0, 10)

	r1 := start("r1")
	waitFor(t, "r1 to process", 60*time.Second, func() bool { return r1.E.Stats().Committed > 10 })
	r1.Crash() // a transaction open on the changelog, left to time out
	r2, r3 := start("r2"), start("r3")
	var first, second *enginetest.Replica
	waitFor(t, "the task to move on", 60*time.Second, func() bool {
		switch {
		case r2.E.Stats().Committed > 3:
			first, second = r2, r3
		case r3.E.Stats().Committed > 3:
			first, second = r3, r2
		}
		return first != nil
	})
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the task to move again", 120*time.Second, func() bool { return second.E.Stats().Committed > 3 })
	n := load.finish()
	env.WaitCount(out, n, 120*time.Second)
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	f, s := first.E.Stats(), second.E.Stats()
	t.Logf("%d inputs; restores that waited for an open changelog transaction: %d by the first owner after the kill, %d by the second; records restored: %d and %d", n, f.RestoreWaits, s.RestoreWaits, f.Restored, s.Restored)
	env.VerifySources(in, out)
	checkCounts(t, env, in, out)
}
