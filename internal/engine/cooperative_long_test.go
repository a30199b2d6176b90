//go:build long || kafka

package engine_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// commitWatch polls a group's committed offsets and keeps, per
// topic-partition, the times its committed offset moved: an outside view
// of every replica's commits.
type commitWatch struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	at   map[string][]time.Time // "topic/partition" → when it moved
}

func watchCommits(env *enginetest.Env, group string, topics ...string) *commitWatch {
	w := &commitWatch{stop: make(chan struct{}), done: make(chan struct{}), at: map[string][]time.Time{}}
	go func() {
		defer close(w.done)
		last := map[string]int64{}
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			for _, topic := range topics {
				now := time.Now()
				for p, off := range env.CommittedOffsets(group, topic) {
					k := fmt.Sprintf("%s/%d", topic, p)
					if off != last[k] {
						last[k] = off
						w.mu.Lock()
						w.at[k] = append(w.at[k], now)
						w.mu.Unlock()
					}
				}
			}
		}
	}()
	return w
}

func (w *commitWatch) finish() {
	close(w.stop)
	<-w.done
}

// longestGap is the longest time between two moves (or the window's ends
// and the moves nearest them) of any of parts within [from, to].
func (w *commitWatch) longestGap(parts []string, from, to time.Time) (time.Duration, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var worst time.Duration
	var which string
	for _, k := range parts {
		prev := from
		for _, at := range append(slices.Clone(w.at[k]), to) {
			if at.Before(from) {
				continue
			}
			if at.After(to) {
				at = to
			}
			if gap := at.Sub(prev); gap > worst {
				worst, which = gap, k
			}
			prev = at
		}
	}
	return worst, which
}

// partitionsOf lists a replica's claimed partitions as "topic/partition".
func partitionsOf(r *enginetest.Replica) []string {
	var out []string
	for _, ts := range r.E.Status().Tasks {
		out = append(out, fmt.Sprintf("%s/%d", ts.Topic, ts.Partition))
	}
	return out
}

// A replica joins a stateful merge count while records flow, then leaves:
// the tasks that stay with the first replica keep committing through both
// rebalances (the longest gap between two commits of a staying partition
// is measured and logged beside the commit interval and the gaps of a quiet
// moment), the moving tasks are committed by their old owner and restored
// by their new one, and every key's count read back read_committed is
// exact: nothing lost, nothing doubled.
func TestCooperativeRebalanceKeepsStayingTasksCommitting(t *testing.T) {
	env := enginetest.New(t)
	a, b, out, app := env.Name("ma"), env.Name("mb"), env.Name("out"), env.Name("app")
	env.CreateTopic(a, 6)
	env.CreateTopic(b, 6)
	g := compile(t, mergeCountTopology(a, b, out))
	const keys = 60
	ctx, stopLoad := context.WithCancel(context.Background())
	rounds := make(chan int, 1)
	go func() {
		n := 0
		defer func() { rounds <- n }()
		for ctx.Err() == nil {
			rs := make([]*kgo.Record, 0, 2*keys)
			for k := range keys {
				for _, topic := range []string{a, b} {
					rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k-%02d", k), Value: fmt.Appendf(nil, "%d", n)})
				}
			}
			env.ProduceRecords(rs...)
			n++
			time.Sleep(5 * time.Millisecond) // the load's pace, not a wait
		}
	}()
	defer stopLoad()

	r1 := env.Start(stateConfig(env, app, "r1", t.TempDir()), g)
	waitFor(t, "r1 to hold every task and process", 60*time.Second, func() bool {
		return len(partitionsOf(r1)) == 12 && r1.E.Stats().RecordsIn > 2000
	})
	w := watchCommits(env, app, a, b)
	defer w.finish()
	quietFrom := time.Now()
	time.Sleep(2 * time.Second) // the window the gaps are measured in
	quiet, _ := w.longestGap(partitionsOf(r1), quietFrom, time.Now())

	// A replica joins.
	joinAt := time.Now()
	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	waitFor(t, "r2 to take its tasks and process", 90*time.Second, func() bool {
		return len(partitionsOf(r2)) == 6 && len(partitionsOf(r1)) == 6 && r2.E.Stats().RecordsIn > 500
	})
	time.Sleep(time.Second) // the window the gaps are measured in
	stayed := partitionsOf(r1)
	joinGap, joinWhich := w.longestGap(stayed, joinAt, time.Now())

	// It leaves.
	leaveAt := time.Now()
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "r1 to hold every task again", 90*time.Second, func() bool { return len(partitionsOf(r1)) == 12 })
	before := r1.E.Stats().RecordsIn
	waitFor(t, "r1 to process the tasks it took back", 60*time.Second, func() bool { return r1.E.Stats().RecordsIn > before+2000 })
	leaveGap, leaveWhich := w.longestGap(stayed, leaveAt, time.Now())

	stopLoad()
	n := <-rounds
	waitConsumed(t, env, app, 120*time.Second, a, b)
	if err := r1.Stop(); err != nil {
		t.Error(err)
	}
	interval := env.Config(app, "x").CommitInterval
	t.Logf("longest gap between commits of a staying partition: join %v (%s), leave %v (%s); quiet %v; commit interval %v",
		joinGap.Round(time.Millisecond), joinWhich, leaveGap.Round(time.Millisecond), leaveWhich, quiet.Round(time.Millisecond), interval)
	t.Logf("r1: %+v", r1.E.Stats())

	got := lastCounts(env, out)
	var wrong []string
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if got[k] != int64(2*n) {
			wrong = append(wrong, fmt.Sprintf("%s=%d", k, got[k]))
		}
	}
	if len(got) != keys || len(wrong) > 0 {
		t.Errorf("%d keys, %d of them not at %d: %v", len(got), len(wrong), 2*n, wrong)
	}
}

// A replica with a long commit interval holds an open transaction when a
// second replica joins and takes half its tasks: the open transaction is
// committed before the revoked partitions are released, so the new owner
// starts after what the first processed. Without that commit the new owner
// starts from the offsets committed before, and the first replica's later
// commit (in the generation the group is in by then, which it holds too)
// doubles those records.
func TestRevokedTaskIsCommittedBeforeRelease(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	g := compile(t, copyex.Topology(in, out))
	cfg := func(name string) engine.Config {
		c := env.Config(app, name)
		c.CommitInterval = 4 * time.Second
		c.CommitRecords = 1 << 20
		return c
	}
	load := startLoad(env, in, 0, 20)
	r1 := env.Start(cfg("r1"), g)
	waitFor(t, "r1's first commit", 60*time.Second, func() bool { return r1.E.Stats().Committed >= 1 })
	r2 := env.Start(cfg("r2"), g)
	waitFor(t, "r2 to commit its tasks", 60*time.Second, func() bool {
		return len(partitionsOf(r2)) == 2 && r2.E.Stats().Committed >= 1
	})
	n := load.finish()
	env.WaitCount(out, n, 90*time.Second)
	for _, r := range []*enginetest.Replica{r1, r2} {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	}
	rep := env.Verify(in, out)
	if rep.Input != n {
		t.Errorf("input %d, want %d", rep.Input, n)
	}
	t.Logf("r1 %+v; r2 %+v", r1.E.Stats(), r2.E.Stats())
}

// A task a replica takes over within its session is restored in its
// claim's goroutine; when the group moves it away again before that
// restore ends (here a hook holds the restore's first batch), the restore
// stops, the claim is left unused, and nothing is logged as a warning.
// The counts stay exact.
func TestTaskRevokedWhileRestoringWithinASession(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	g := compile(t, plainCountTopology(in, out))
	var waits1, waits2 atomic.Int32
	cfg1, log1 := capturedConfig(env, app, "r1", &waits1)
	cfg2, _ := capturedConfig(env, app, "r2", &waits2)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("r1:\n%s", log1)
		}
	})
	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	cfg1.Hooks.BeforeRestoreBatch = func(_ string, partition int32, _ int, _ int64) error {
		if partition == 1 && armed.CompareAndSwap(true, false) {
			close(held)
			<-release
		}
		return nil
	}
	// r1 holds both tasks first, so that r2 takes task 0_1 from it (the
	// assignor keeps a member's lowest partitions) and, when r2 comes back
	// later, takes 0_1 again.
	r1 := env.Start(cfg1, g)
	waitFor(t, "r1 to hold both tasks", 60*time.Second, func() bool { return len(partitionsOf(r1)) == 2 })
	r2 := env.Start(cfg2, g)
	waitFor(t, "both replicas to hold a task", 60*time.Second, func() bool {
		return len(partitionsOf(r1)) == 1 && len(partitionsOf(r2)) == 1
	})
	env.Produce(in, 0, 100)
	waitFor(t, "the input counted", 60*time.Second, func() bool { return r1.E.Stats().RecordsIn+r2.E.Stats().RecordsIn >= 100 })

	// r2 leaves: r1 claims task 0_1 and restores it, held.
	armed.Store(true)
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	recv(t, "r1's restore of the task it took over", held, 60*time.Second)
	// r2 comes back and takes its task again, while r1 restores it.
	gen := r1.E.Status().Generation
	cfg2, _ = capturedConfig(env, app, "r2", &waits2)
	r2 = env.Start(cfg2, g)
	waitFor(t, "a generation that gives r1 one task", 60*time.Second, func() bool { return r1.E.Status().Generation > gen })
	close(release)
	waitFor(t, "r1 to stop restoring the task it lost", 60*time.Second, func() bool {
		return strings.Contains(log1.String(), "restore stopped: the task was revoked")
	})
	waitFor(t, "both replicas to hold a task again", 60*time.Second, func() bool {
		return len(partitionsOf(r1)) == 1 && len(partitionsOf(r2)) == 1
	})
	env.Produce(in, 100, 100)
	env.WaitCount(out, 200, 60*time.Second)
	for _, r := range []*enginetest.Replica{r1, r2} {
		if err := r.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	if w := log1.warnings(); len(w) > 0 {
		t.Errorf("r1 logged %d warnings:\n%s", len(w), strings.Join(w, "\n"))
	}
	checkCounts(t, env, in, out)
}
