//go:build long

package engine_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
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

// A task goes from r1 to r2 and, when r2 leaves, back to r1 within r1's
// session. r1 kept its own (now stale) state of the task: the restore
// must catch up with what r2 counted and deduplicated meanwhile. The
// events r2 counted are sent again once r1 holds the task again: each is
// a duplicate and counted once; every key's count is exact.
func TestTaskBackWithinTheSessionCatchesUpWithItsOtherOwner(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	g := compile(t, countTopology(in, out))
	env.Produce(in, 0, 100)
	var waits atomic.Int32
	cfg1, log1 := capturedConfig(env, app, "r1", &waits)
	cfg1.StateDir = t.TempDir()
	r1 := env.Start(cfg1, g)
	env.WaitCount(out, 100, 60*time.Second)
	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	waitFor(t, "each replica to hold a task", 60*time.Second, func() bool {
		return len(claimedOf(r1)) == 1 && len(claimedOf(r2)) == 1
	})
	env.Produce(in, 100, 100)
	env.WaitCount(out, 200, 60*time.Second)
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "r1 to hold both tasks again", 60*time.Second, func() bool { return len(claimedOf(r1)) == 2 })
	env.Produce(in, 100, 100) // the same events again
	env.Produce(in, 200, 100)
	env.WaitCount(out, 300, 60*time.Second)
	waitConsumed(t, env, app, 60*time.Second, in)
	if err := r1.Stop(); err != nil {
		t.Error(err)
	}
	t.Logf("r1 %+v; r2 %+v", r1.E.Stats(), r2.E.Stats())
	if n := strings.Count(log1.String(), "session started"); n != 1 || !strings.Contains(log1.String(), "task claimed") {
		t.Errorf("r1 ran %d sessions and took its task back within one: %v, want 1 and true", n, strings.Contains(log1.String(), "task claimed"))
	}
	got := lastCounts(env, out)
	var wrong []string
	for k, n := range got {
		if n != 6 {
			wrong = append(wrong, fmt.Sprintf("%s=%d", k, n))
		}
	}
	if len(got) != 50 || len(wrong) > 0 || len(env.Read(out)) != 300 {
		t.Errorf("%d keys, %d outputs (want 50 keys at 6, 300 outputs); wrong: %v", len(got), len(env.Read(out)), wrong)
	}
}

// A wall-clock punctuator counts its firings per task in a store and
// forwards each count. A task moves from r1 to r2 while both tick every
// 50 ms, and back to r1 when r2 leaves. Suspected: the old owner fires
// for the task after releasing it (its schedule outlives the claim), or
// the new owner starts from a count that misses the old owner's last
// firing. Per task, the counts read back read_committed must be 1, 2, ...
// each once.
func TestPunctuatorOfAMovedTaskFiresOnce(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	env.CreateTopic(out, 1)
	env.Produce(in, 0, 20)
	firings := func(tag, task string) (n int) {
		for _, r := range env.Read(out) {
			if string(r.Key) == tag && strings.HasSuffix(r.Headers[wire.HeaderSource], "/"+task) {
				n++
			}
		}
		return n
	}
	r1 := env.Start(stateConfig(env, app, "r1", t.TempDir()), compile(t, tickTopology(in, out, "r1")))
	waitFor(t, "r1's ticks on both tasks", 60*time.Second, func() bool { return firings("r1", "0_0") >= 10 && firings("r1", "0_1") >= 10 })
	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), compile(t, tickTopology(in, out, "r2")))
	waitFor(t, "r2's ticks", 60*time.Second, func() bool { return firings("r2", "0_0")+firings("r2", "0_1") >= 20 })
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "r1 to hold both tasks again", 60*time.Second, func() bool { return len(claimedOf(r1)) == 2 })
	before := firings("r1", "0_0") + firings("r1", "0_1")
	waitFor(t, "r1's ticks on both tasks again", 60*time.Second, func() bool {
		return firings("r1", "0_0")+firings("r1", "0_1") >= before+40
	})
	if err := r1.Stop(); err != nil {
		t.Error(err)
	}
	seen := map[string]map[int]int{}
	for _, r := range env.Read(out) {
		src := r.Headers[wire.HeaderSource]
		task := src[strings.LastIndex(src, "/")+1:]
		var tag string
		var n int
		if _, err := fmt.Sscanf(strings.Replace(string(r.Value), ":", " ", 1), "%s %d", &tag, &n); err != nil {
			t.Fatalf("value %q: %v", r.Value, err)
		}
		if seen[task] == nil {
			seen[task] = map[int]int{}
		}
		seen[task][n]++
	}
	for task, ns := range seen {
		var bad []string
		for i := 1; i <= len(ns); i++ {
			if ns[i] != 1 {
				bad = append(bad, fmt.Sprintf("%d×%d", i, ns[i]))
			}
		}
		t.Logf("task %s: %d firings", task, len(ns))
		if len(bad) > 0 {
			t.Errorf("task %s: counts not each once: %v", task, bad)
		}
	}
}
