//go:build kafka && (cluster || !cluster)

// `make test-cluster` runs this file's tests on three brokers too: the tag
// marks the file for scripts/test-tagged.sh, the constraint always holds.

package engine_test

import (
	"sync"
	"testing"
	"time"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// On a three-broker cluster, the broker that is the transaction coordinator
// of a copying replica is killed with SIGKILL while records flow, and later
// started again on its data; twice (the second time the coordinator the
// first kill moved to). The replica must go on through the failover (the
// coordinator moves to another broker's __transaction_state leader; commits
// in flight hang or fail and are retried under the commit deadline), and
// the read_committed output must hold every input exactly once.
func TestTxnCoordinatorKillOnCluster(t *testing.T) {
	cluster := enginetest.ClusterFromEnv(t)
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 6)
	g := compile(t, copyex.Topology(in, out))
	load := startLoad(env, in, 0, 50)
	stopLoad := sync.OnceValue(load.finish)
	t.Cleanup(func() { stopLoad() })
	a := env.Start(env.Config(app, "a"), g)
	progress := func(what string, records int64) {
		t.Helper()
		from := a.E.Stats().RecordsIn
		waitFor(t, what, 3*time.Minute, func() bool { return a.E.Stats().RecordsIn >= from+records })
	}
	progress("the replica to copy", 2000)

	txnID := app + "-a"
	for round := 1; round <= 2; round++ {
		node := env.TxnCoordinator(txnID)
		t.Logf("round %d: transaction coordinator of %s is broker %d (group coordinator %d); killing it", round, txnID, node, env.GroupCoordinator(app))
		killed := time.Now()
		cluster.Kill(node)
		progress("the replica to copy with the coordinator's broker down", 2000)
		moved := env.TxnCoordinator(txnID)
		t.Logf("round %d: copying again %v after the kill; coordinator now broker %d", round, time.Since(killed).Round(time.Millisecond), moved)
		if moved == node {
			t.Errorf("round %d: the coordinator is still broker %d, which is down", round, node)
		}
		cluster.Start(node)
		progress("the replica to copy after the broker's restart", 2000)
	}

	n := stopLoad()
	env.WaitCount(out, n, 3*time.Minute)
	if err := a.Stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	st := a.E.Stats()
	t.Logf("stats: records in %d, committed %d, aborted %d, sessions %d, producer recreations %d, commit timeouts %d", st.RecordsIn, st.Committed, st.Aborted, st.Sessions, st.ProducerRecreations, st.CommitTimeouts)
	rep := env.Verify(in, out)
	if rep.Input != n || rep.Output != n {
		t.Errorf("input %d, output %d; want %d each", rep.Input, rep.Output, n)
	}
}
