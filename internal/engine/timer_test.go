package engine_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// flushTopology counts records per key in a store and, every 50 ms of
// wall clock, forwards each count and deletes it. Each run of the
// punctuator (one per task and interval) adds one to punctuations.
func flushTopology(in, out string, punctuations *atomic.Int64) *topology.Topology {
	tp := topology.New("flush")
	src := topology.Source(tp, in, serde.String(), serde.String())
	counts := topology.Store(tp, "pending", serde.String(), serde.Int64())
	buffered := topology.Process(src, "buffer", func(ctx topology.Context[string, int64], r topology.Record[string, string]) error {
		n, _, err := counts.Get(ctx, r.Key)
		if err != nil {
			return err
		}
		return counts.Put(ctx, r.Key, n+1)
	}, counts)
	topology.Punctuate(buffered, topology.WallClockTime, 50*time.Millisecond, func(ctx topology.Context[string, int64], at time.Time) error {
		punctuations.Add(1)
		var keys []string
		var ns []int64
		if err := counts.Range(ctx, func(k string, n int64) bool {
			keys, ns = append(keys, k), append(ns, n)
			return true
		}); err != nil {
			return err
		}
		for i, k := range keys {
			if err := ctx.Forward(topology.Record[string, int64]{Key: k, Value: ns[i], Timestamp: at}); err != nil {
				return err
			}
			if err := counts.Delete(ctx, k); err != nil {
				return err
			}
		}
		return nil
	})
	topology.To(buffered, out, serde.String(), serde.Int64())
	return tp
}

// flushed sums the counts out holds.
func flushed(env *enginetest.Env, out string) int64 {
	var sum int64
	for _, r := range env.Read(out) {
		sum += int64(binary.BigEndian.Uint64(r.Value))
	}
	return sum
}

// A wall-clock punctuator's outputs and state changes commit in the
// task's transaction: across a crash between a commit and its local
// apply, every record is counted in exactly
// one flushed count, none twice and none lost.
func TestPunctuatorEffectsOnceAcrossCrash(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 3)
	var punctuations atomic.Int64
	g := compile(t, flushTopology(in, out, &punctuations))
	dir := t.TempDir()

	// The replica dies after a commit, before its state reaches Pebble:
	// the restart restores the tail, flushes and deletions included.
	crashed := make(chan struct{})
	cfg := stateConfig(env, app, "r1", dir)
	// Armed after a few commits, it skips the apply of the first commit
	// that wrote state (an idle punctuation's transaction writes none).
	var eng atomic.Pointer[engine.Engine]
	applies, changes, skipped := 0, int64(0), false
	cfg.Hooks.BeforeApply = func() bool {
		e := eng.Load()
		if e == nil || skipped {
			return true
		}
		applies++
		n := e.Stats().ChangelogRecords
		wrote := n > changes
		changes = n
		if applies >= 8 && wrote {
			skipped = true
			close(crashed)
			return false
		}
		return true
	}
	r := env.Start(cfg, g)
	eng.Store(r.E)
	for i := range 30 { // input keeps coming while the punctuator flushes
		env.Produce(in, i*100, 100)
		time.Sleep(20 * time.Millisecond)
	}
	recv(t, "a commit whose apply is skipped", crashed, 60*time.Second)
	r.Crash()
	before := flushed(env, out)

	r = env.Start(stateConfig(env, app, "r1", dir), g)
	env.Produce(in, 3000, 2000)
	waitFor(t, "every record flushed", 60*time.Second, func() bool { return flushed(env, out) >= 5000 })
	// Ten more flushes of each of the three tasks: anything counted twice
	// would show.
	ran := punctuations.Load()
	waitFor(t, "ten more flushes", 60*time.Second, func() bool { return punctuations.Load() >= ran+30 })
	r.Stop()
	if got := flushed(env, out); got != 5000 {
		t.Errorf("flushed counts add up to %d, want 5000", got)
	}
	if s := r.E.Stats(); s.Restored == 0 {
		t.Errorf("the restart restored nothing: the skipped apply held no state change, so the crash tested nothing")
	}
	t.Logf("%d flushed before the crash; %+v", before, r.E.Stats())
}

// A wall-clock punctuator that finds nothing to do leaves no transaction
// behind: an idle replica does not commit (nor sync its state) every
// interval.
func TestIdlePunctuatorCommitsNothing(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	var punctuations atomic.Int64
	r := env.Start(stateConfig(env, app, "r1", t.TempDir()), compile(t, flushTopology(in, out, &punctuations)))
	r.WaitReady(t, 60*time.Second)
	// Twenty idle punctuations of each of the two tasks, a second at
	// least: many commit intervals in which a transaction would commit.
	waitFor(t, "twenty punctuations of each task", 60*time.Second, func() bool { return punctuations.Load() >= 40 })
	if s := r.E.Stats(); s.Committed != 0 || s.Aborted != 0 {
		t.Errorf("idle: %d transactions committed, %d aborted; want none", s.Committed, s.Aborted)
	}
	env.Produce(in, 0, 10)
	waitFor(t, "the flush of 10 records", 30*time.Second, func() bool { return flushed(env, out) == 10 })
	r.Stop()
	if s := r.E.Stats(); s.Committed == 0 {
		t.Error("no transaction committed after input")
	}
}
