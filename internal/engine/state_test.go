package engine_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// countTopology counts records per key behind a dedup gate.
func countTopology(in, out string) *topology.Topology {
	tp := topology.New("counts")
	src := topology.Source(tp, in, serde.String(), serde.String())
	fresh := topology.Dedup(src, "dedup-1", topology.EventIDHeader("event-id"), 24*time.Hour)
	topology.To(topology.Count(fresh, "counts", serde.String()), out, serde.String(), serde.Int64())
	return tp
}

// checkCounts compares the last output per key with a recount of the input:
// lost or replayed state would show as a wrong count.
func checkCounts(t *testing.T, env *enginetest.Env, in, out string) {
	t.Helper()
	want := map[string]int64{}
	for _, r := range env.Read(in) {
		want[string(r.Key)]++
	}
	got := map[string]int64{}
	for _, r := range env.Read(out) { // offset order within each partition; a key stays on one
		got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
	}
	if len(got) != len(want) {
		t.Errorf("%d keys in the output, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("key %s: count %d, want %d", k, got[k], w)
		}
	}
}

func stateConfig(env *enginetest.Env, app, instance, dir string) engine.Config {
	cfg := env.Config(app, instance)
	cfg.StateDir = dir
	return cfg
}

// The replica dies after a commit and before its state reached Pebble. On
// restart it restores just that tail from the changelog, no wipe, and the
// counts equal a recount.
func TestCrashBetweenCommitAndApplyRestoresTheTail(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 3)
	g := compile(t, countTopology(in, out))
	dir := t.TempDir()

	env.Produce(in, 0, 3000)
	r := env.Start(stateConfig(env, app, "r1", dir), g)
	env.WaitCount(out, 3000, 60*time.Second)

	crashed := make(chan struct{})
	cfg := stateConfig(env, app, "r1", dir)
	armed := true
	cfg.Hooks.BeforeApply = func() bool {
		if armed {
			armed = false
			close(crashed)
			return false
		}
		return true
	}
	r.Stop()
	r = env.Start(cfg, g)
	env.Produce(in, 3000, 500)
	recv(t, "a commit whose apply is skipped", crashed, 60*time.Second)
	r.Crash()

	r = env.Start(stateConfig(env, app, "r1", dir), g)
	env.Produce(in, 3500, 500)
	env.WaitCount(out, 4000, 60*time.Second)
	r.Stop()
	s := r.E.Stats()
	if s.Restored == 0 || s.Restored > 1000 {
		t.Errorf("restored %d changelog records, want the tail (1..1000)", s.Restored)
	}
	if s.Wipes != 0 {
		t.Errorf("%d wipes, want none", s.Wipes)
	}
	env.VerifySources(in, out)
	checkCounts(t, env, in, out)
	t.Logf("after restart: %+v", s)
}

// Tasks move to a replica with no local state: it restores them from the
// changelog (from nothing) before processing, and counts go on.
func TestTaskMovesAndRestoresFromTheChangelog(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)
	g := compile(t, countTopology(in, out))
	env.Produce(in, 0, 2000)
	r1 := env.Start(stateConfig(env, app, "r1", t.TempDir()), g)
	env.WaitCount(out, 2000, 60*time.Second)

	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	waitFor(t, "r2 to restore moved tasks", 60*time.Second, func() bool { return r2.E.Stats().Restored > 0 && r2.E.Ready() })
	env.Produce(in, 2000, 2000)
	env.WaitCount(out, 4000, 60*time.Second)
	r1.Stop()
	r2.Stop()
	env.VerifySources(in, out)
	checkCounts(t, env, in, out)
	// The counts were restored from a changelog that holds only the last
	// write of each key per chunk.
	if s := r1.E.Stats(); s.ChangesCollapsed == 0 || s.ChangelogRecords == 0 {
		t.Errorf("r1 wrote %d changelog records and collapsed %d writes; a hot key should collapse", s.ChangelogRecords, s.ChangesCollapsed)
	}
	t.Logf("r1 %+v; r2 %+v", r1.E.Stats(), r2.E.Stats())
}

// The changelog no longer holds the offset a replica's local state
// records: that task's store is wiped and restored fully from the log start.
func TestTruncatedChangelogWipesAndRestoresFully(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("Kafka refuses DeleteRecords on a compacted changelog (POLICY_VIOLATION); the embedded broker allows it")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	changelog := app + "-counts-changelog"
	env.CreateTopic(in, 2)
	g := compile(t, countTopology(in, out))
	dirA := t.TempDir()

	env.Produce(in, 0, 1000)
	r1 := env.Start(stateConfig(env, app, "r1", dirA), g)
	env.WaitCount(out, 1000, 60*time.Second)
	r1.Stop()
	cut := env.EndOffsets(changelog)

	// Another replica, with its own state, moves every key on, twice: the
	// second round rewrites every key in later transactions, so the one
	// record cut off below the new log start is superseded, as compaction
	// would have it (a transaction sends only its last write of a key).
	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	env.Produce(in, 1000, 1000)
	env.WaitCount(out, 2000, 60*time.Second)
	env.Produce(in, 2000, 1000)
	env.WaitCount(out, 3000, 60*time.Second)
	r2.Stop()
	for p := range cut {
		cut[p]++
	}
	env.DeleteRecords(changelog, cut)

	r1 = env.Start(stateConfig(env, app, "r1", dirA), g)
	env.Produce(in, 3000, 1000)
	env.WaitCount(out, 4000, 60*time.Second)
	r1.Stop()
	if s := r1.E.Stats(); s.Wipes == 0 {
		t.Errorf("no wipe: %+v", s)
	}
	env.VerifySources(in, out)
	checkCounts(t, env, in, out)
}

func orderRecord(topic, key, eventID, value string, ts time.Time) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value), Timestamp: ts,
		Headers: []kgo.RecordHeader{{Key: "event-id", Value: []byte(eventID)}}}
}

// Duplicates, conflicts and stale versions are rejected with their reason;
// dedup entries expire by event time and then the id is new again.
func TestGatesRejectVisiblyAndDedupExpires(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	type ev struct {
		Order   string `json:"order"`
		Version uint64 `json:"version"`
	}
	tp := topology.New("gates")
	src := topology.Source(tp, in, serde.String(), serde.JSON[ev]())
	fresh := topology.Dedup(src, "dedup-1", topology.EventIDHeader("event-id"), time.Hour)
	current := topology.LatestVersion(fresh, "latest-version-1", func(_ string, e ev) (string, uint64) { return e.Order, e.Version })
	topology.To(current, out, serde.String(), serde.JSON[ev]())

	t0 := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	env.ProduceRecords(
		orderRecord(in, "k", "e1", `{"order":"o1","version":1}`, at(0)),
		orderRecord(in, "k", "e2", `{"order":"o1","version":3}`, at(time.Minute)),
		orderRecord(in, "k", "e1", `{"order":"o1","version":1}`, at(2*time.Minute)),           // duplicate
		orderRecord(in, "k", "e2", `{"order":"o1","version":4}`, at(3*time.Minute)),           // conflict
		orderRecord(in, "k", "e3", `{"order":"o1","version":2}`, at(4*time.Minute)),           // stale
		orderRecord(in, "k", "e4", `{"order":"o2","version":1}`, at(2*time.Hour)),             // moves stream time: e1..e3 expire
		orderRecord(in, "k", "e1", `{"order":"o3","version":1}`, at(2*time.Hour+time.Second)), // e1 again: new after expiry
	)
	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	env.WaitCount(out, 4, 60*time.Second)
	env.WaitCount(app+"-rejected", 3, 60*time.Second)
	r.Stop()

	reasons := map[string]int{}
	for _, rec := range env.Read(app + "-rejected") {
		reasons[rec.Headers[wire.HeaderRejectReason]]++
	}
	want := map[string]int{"duplicate": 1, "conflict": 1, "stale": 1}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("rejections %v, want %v", reasons, want)
	}
	if n := len(env.Read(out)); n != 4 {
		t.Errorf("%d outputs, want 4 (e1, e2, e4, e1 after expiry)", n)
	}
	// e2 expires; e1 was taken again as new; e3 was rejected as stale by
	// the gate after dedup, so its event id was rolled back with it.
	if s := r.E.Stats(); s.Expired < 1 {
		t.Errorf("expired %d dedup entries, want at least 1", s.Expired)
	}
	tombstones := 0
	for _, rec := range env.Read(app + "-dedup-1-changelog") {
		if rec.Value == nil {
			tombstones++
		}
	}
	if tombstones < 1 {
		t.Errorf("%d tombstones in the dedup changelog, want at least 1", tombstones)
	}
}
