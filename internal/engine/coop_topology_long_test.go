//go:build long

package engine_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// A replica whose topology reads two more topics, declared before the
// count's source, numbers the count's sub-topology 2 where the group's
// leader (which reads only the count's source) numbers it 0. The leader
// hands it half the count's tasks in a follow-up round, within its
// session: it restores them and processes them, and every record is
// counted once. A task is compared by its topic-partitions, not by the
// leader's sub-topology numbers.
func TestTaskAddedByALeaderWithAnotherTopology(t *testing.T) {
	env := enginetest.New(t)
	in, x, y, out, side, app := env.Name("in"), env.Name("x"), env.Name("y"), env.Name("out"), env.Name("side"), env.Name("app")
	env.CreateTopic(in, 4)
	env.CreateTopic(x, 1)
	env.CreateTopic(y, 1)
	wide := topology.New("wide")
	for _, topic := range []string{x, y} {
		topology.To(topology.Source(wide, topic, serde.String(), serde.String()), side, serde.String(), serde.String())
	}
	counted := topology.Source(wide, in, serde.String(), serde.String())
	topology.To(topology.Count(counted, "counts", serde.String()), out, serde.String(), serde.Int64())

	env.Produce(in, 0, 200)
	r1 := env.Start(stateConfig(env, app, "r1", t.TempDir()), compile(t, plainCountTopology(in, out)))
	env.WaitCount(out, 200, 60*time.Second)
	var waits atomic.Int32
	cfg2, log2 := capturedConfig(env, app, "r2", &waits)
	r2 := env.Start(cfg2, compile(t, wide))
	waitFor(t, "r2 to process half the count's tasks", 60*time.Second, func() bool {
		return len(claimedOf(r1)) == 2 && len(claimedOf(r2)) == 4
	})
	env.Produce(in, 200, 200)
	env.WaitCount(out, 400, 60*time.Second)
	for _, r := range []*enginetest.Replica{r1, r2} {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	}
	sessions := strings.Count(log2.String(), "session started")
	revoked := strings.Count(log2.String(), "restore stopped: the task was revoked")
	t.Logf("r2: %d sessions, %d restores stopped as revoked", sessions, revoked)
	if sessions != 1 || revoked != 0 {
		t.Errorf("r2 took its tasks in %d sessions, %d of its restores stopped as revoked, want 1 and 0:\n%s", sessions, revoked, log2)
	}
	checkCounts(t, env, in, out)
}

// claimedOf lists the partitions a replica processes as "topic/partition".
func claimedOf(r *enginetest.Replica) []string {
	var out []string
	for _, ts := range r.E.Status().Tasks {
		out = append(out, fmt.Sprintf("%s/%d", ts.Topic, ts.Partition))
	}
	return out
}
