package engine_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// kvTopology keeps the last value of each key in store "kv" ("del"
// deletes the key) and outputs what the key held before: "had=<value>" or
// "had=none".
func kvTopology(in, out string) *topology.Topology {
	tp := topology.New("kv")
	kv := topology.Store(tp, "kv", serde.String(), serde.String())
	src := topology.Source(tp, in, serde.String(), serde.String())
	had := topology.Process(src, "kv", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		old, ok, err := kv.Get(ctx, r.Key)
		if err != nil {
			return err
		}
		if r.Value == "del" {
			err = kv.Delete(ctx, r.Key)
		} else {
			err = kv.Put(ctx, r.Key, r.Value)
		}
		if err != nil {
			return err
		}
		if !ok {
			old = "none"
		}
		return ctx.Forward(topology.Record[string, string]{Key: r.Key, Value: "had=" + old})
	}, kv)
	topology.To(had, out, serde.String(), serde.String())
	return tp
}

// A replica's local state of a task it gave away is older than the
// changelog's tombstone retention when the task comes back: the next owner
// deleted a key, and compaction has dropped both the key's value and its
// tombstone. The replica wipes the task and restores it fully rather than
// restore from its old offset and keep the deleted key.
func TestStaleLocalStateIsWipedNotResurrected(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("compaction on demand needs the embedded broker")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	changelog := app + "-kv-changelog"
	env.CreateTopic(in, 1)
	g := compile(t, kvTopology(in, out))
	clock := &fakeClock{}
	config := func(instance, dir string) engine.Config {
		cfg := stateConfig(env, app, instance, dir)
		cfg.Now = clock.now
		cfg.CleanupDelay = 1000 * time.Hour // not under test here
		return cfg
	}
	produce := func(key, value string, outputs int) {
		env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte(key), Value: []byte(value)})
		env.WaitCount(out, outputs, 60*time.Second)
	}
	dirA := t.TempDir()

	// The first record (a key never written again) keeps the changelog's
	// start where it is through compaction, as on a real broker.
	r1 := env.Start(config("r1", dirA), g)
	produce("a", "1", 1)
	produce("k", "v1", 2)
	r1.Stop()

	// The next owner deletes k; later transactions keep the tombstone out
	// of the active segment, which compaction leaves alone.
	r2 := env.Start(config("r2", t.TempDir()), g)
	produce("k", "del", 3)
	produce("x", "1", 4)
	produce("y", "1", 5)
	r2.Stop()

	// The cleaner drops the tombstone once delete.retention.ms has passed.
	compactAway(t, env, changelog, "k")
	clock.advance(2 * time.Hour)

	r1 = env.Start(config("r1", dirA), g)
	produce("k", "v2", 6)
	r1.Stop()
	rs := env.Read(out)
	if got := string(rs[len(rs)-1].Value); got != "had=none" {
		t.Errorf("k after it was deleted: %s, want had=none (a deleted key came back)", got)
	}
	if s := r1.E.Stats(); s.Wipes != 1 || s.Restored != 3 {
		t.Errorf("r1 wiped %d task stores and restored %d records, want 1 wipe and a full restore of 3 (a, x, y)", s.Wipes, s.Restored)
	}
}

// compactAway runs the embedded broker's cleaner over changelog as if its
// delete.retention.ms had passed: key's value and tombstone go, and the
// retention is then one hour. The changelog's first record must be of a key
// never written again, so that its start stays at 0.
func compactAway(t *testing.T, env *enginetest.Env, changelog, key string) {
	t.Helper()
	env.SetTopicConfig(changelog, "delete.retention.ms", "0")
	env.Broker.Cluster().Compact()
	for _, r := range env.Read(changelog) {
		if string(r.Key) == key {
			t.Fatalf("the changelog still holds a record of %s after compaction: the test would test nothing", key)
		}
	}
	if start := env.StartOffsets(changelog)[0]; start != 0 {
		t.Fatalf("compaction moved the changelog's start to %d: the test would test the truncated-changelog path", start)
	}
	env.SetTopicConfig(changelog, "delete.retention.ms", strconv.FormatInt(time.Hour.Milliseconds(), 10))
}

// A replica begins to restore a task whose local state is old, though not
// yet too old to restore from, and is killed before the restore ends. By
// the time it starts again the state is older than the changelog's
// tombstone retention and the next owner's tombstone has been compacted
// away: the replica wipes the task rather than resume from its old offset
// and keep the deleted key. A restore that did not finish does not make
// the state it started from any fresher.
func TestCutShortRestoreKeepsTheEarlierOwnership(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("compaction on demand needs the embedded broker")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	changelog := app + "-kv-changelog"
	env.CreateTopic(in, 1)
	g := compile(t, kvTopology(in, out))
	clock := &fakeClock{}
	config := func(instance, dir string) engine.Config {
		cfg := stateConfig(env, app, instance, dir)
		cfg.Now = clock.now
		cfg.CleanupDelay = 1000 * time.Hour // not under test here
		return cfg
	}
	produce := func(key, value string, outputs int) {
		env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte(key), Value: []byte(value)})
		env.WaitCount(out, outputs, 60*time.Second)
	}
	dirA := t.TempDir()

	r1 := env.Start(config("r1", dirA), g)
	produce("a", "1", 1)
	produce("k", "v1", 2)
	r1.Stop()
	r2 := env.Start(config("r2", t.TempDir()), g)
	produce("k", "del", 3)
	produce("x", "1", 4)
	produce("y", "1", 5)
	r2.Stop()
	env.SetTopicConfig(changelog, "delete.retention.ms", strconv.FormatInt(time.Hour.Milliseconds(), 10))

	// Within the retention (less the session timeout), r1 restores from its
	// offset, and dies before the first batch (k's tombstone) is applied.
	clock.advance(50 * time.Minute)
	cut := make(chan struct{})
	var once sync.Once
	cfg := config("r1", dirA)
	cfg.Hooks.BeforeRestoreBatch = func(topic string, _ int32, _ int, _ int64) error {
		if topic == changelog {
			once.Do(func() { close(cut) })
		}
		return errors.New("injected crash in the middle of a restore")
	}
	r1 = env.Start(cfg, g)
	recv(t, "r1's restore to reach its first batch", cut, 60*time.Second)
	r1.Crash()
	if s := r1.E.Stats(); s.Wipes != 0 || s.Restored != 0 {
		t.Fatalf("the cut-short restore wiped %d and restored %d records; the test needs a restore from r1's offset that applies nothing", s.Wipes, s.Restored)
	}

	// Half an hour later the tombstone is gone, and r1 last owned the task
	// 80 minutes ago.
	clock.advance(30 * time.Minute)
	compactAway(t, env, changelog, "k")
	r1 = env.Start(config("r1", dirA), g)
	produce("k", "v2", 6)
	r1.Stop()
	rs := env.Read(out)
	if got := string(rs[len(rs)-1].Value); got != "had=none" {
		t.Errorf("k after it was deleted: %s, want had=none (a deleted key came back)", got)
	}
	if s := r1.E.Stats(); s.Wipes != 1 || s.Restored != 3 {
		t.Errorf("r1 wiped %d task stores and restored %d records, want 1 wipe and a full restore of 3 (a, x, y)", s.Wipes, s.Restored)
	}
}

// A replica keeps the state of a task that moved away for the cleanup
// delay (it may come back cheaply), then deletes it; when the task comes
// back later it is restored fully, and counts stay right.
func TestStateOfTasksNotOwnedIsDropped(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	g := compile(t, plainCountTopology(in, out))
	clock := &fakeClock{}
	config := func(instance string) engine.Config {
		cfg := stateConfig(env, app, instance, t.TempDir())
		cfg.Now = clock.now
		return cfg
	}

	r1 := env.Start(config("r1"), g)
	env.Produce(in, 0, 200)
	env.WaitCount(out, 200, 60*time.Second)
	r2 := env.Start(config("r2"), g)
	waitFor(t, "r2 to take a task", 60*time.Second, func() bool { return r2.E.Ready() && r2.E.Stats().Restored > 0 })
	r1.WaitReady(t, 60*time.Second)
	env.Produce(in, 200, 200)
	env.WaitCount(out, 400, 60*time.Second)
	if s := r1.E.Stats(); s.Dropped != 0 {
		t.Fatalf("r1 dropped %d task stores within the cleanup delay, want none", s.Dropped)
	}

	clock.advance(engine.DefaultCleanupDelay + time.Minute)
	env.Produce(in, 400, 200)
	env.WaitCount(out, 600, 60*time.Second)
	waitFor(t, "r1 to drop the task it gave away", 30*time.Second, func() bool { return r1.E.Stats().Dropped == 1 })

	// The task comes back and is restored from nothing.
	before := r1.E.Stats().Restored
	r2.Stop()
	env.Produce(in, 600, 200)
	env.WaitCount(out, 800, 60*time.Second)
	r1.Stop()
	// r2 owned that one task: it restored the task's changelog as r1 had
	// left it, then wrote its own records; a restore from r1's old offset
	// would read only r2's.
	full := r2.E.Stats().Restored + r2.E.Stats().ChangelogRecords
	if restored := r1.E.Stats().Restored - before; restored < full {
		t.Errorf("r1 restored %d records of the task that came back, want its full changelog (%d records)", restored, full)
	}
	if s := r1.E.Stats(); s.Dropped != 1 {
		t.Errorf("r1 dropped %d task stores, want 1", s.Dropped)
	}
	env.VerifySources(in, out)
	checkCounts(t, env, in, out)
}
