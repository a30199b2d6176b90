package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// fakeChangelog stands for the changelog reader: it notes the ranges asked
// for, reports the partitions in gone as compacted up to 10 (the restorer
// then wipes), and hands each range one record, key "k<partition>".
type fakeChangelog struct {
	gone   map[int32]bool
	ranges []kafka.ChangelogRange
}

func (f *fakeChangelog) ReadAll(_ context.Context, ranges []kafka.ChangelogRange, gone func(int, int64) error,
	fn func(int, []kafka.ChangelogRecord, int64) error) error {
	f.ranges = append(f.ranges, ranges...)
	for i, r := range ranges {
		from := r.From
		if f.gone[r.Partition] {
			if err := gone(i, 10); err != nil {
				return err
			}
			from = 10
		}
		rec := kafka.ChangelogRecord{Offset: from, Key: fmt.Appendf(nil, "k%d", r.Partition), Value: []byte("v")}
		if err := fn(i, []kafka.ChangelogRecord{rec}, from+1); err != nil {
			return err
		}
	}
	return nil
}

// The restorer, without a broker: a task with fresh local state resumes
// from its offset; one last owned longer ago than the changelog keeps
// tombstones, and one whose offset the changelog no longer holds, are
// wiped and restored from the start; one with no state is restored from
// the start; all are marked owned as of the restore's start. The state
// cleanup leaves a task being restored alone, and a changelog lacking a
// task's partition is seen.
func TestRestorerResumesWipesAndRestores(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	m, err := newMetrics(prometheus.NewRegistry(), "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	db, err := statestore.Open("", statestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const changelog = "app-totals-changelog"
	reader := &fakeChangelog{gone: map[int32]bool{3: true}}
	r := &restorer{log: hclog.NewNullLogger(), m: m, g: &graph.Graph{}, stores: map[string]storeInfo{"totals": {sub: 0, topic: changelog}},
		now: func() time.Time { return now }, timeouts: kafka.Timeouts{Session: 10 * time.Second}, cleanupDelay: time.Hour,
		changelogParts: map[string]int32{changelog: 4}, deleteRetention: map[string]time.Duration{changelog: 24 * time.Hour}}
	r.db, r.reader = db, reader

	st := func(p int32) statestore.StoreTask {
		return statestore.StoreTask{Store: "totals", Task: statestore.Task{SubTopology: 0, Partition: p}}
	}
	seed := func(p int32, offset int64, owned time.Time) {
		t.Helper()
		tx := db.Begin()
		if err := tx.Put("totals", st(p).Task, []byte("old"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Apply(map[statestore.StoreTask]int64{st(p): offset}); err != nil {
			t.Fatal(err)
		}
		if err := db.MarkOwned(owned, st(p)); err != nil {
			t.Fatal(err)
		}
	}
	seed(0, 5, now.Add(-time.Hour))    // fresh
	seed(1, 7, now.Add(-48*time.Hour)) // older than the tombstones' retention
	seed(3, 4, now.Add(-time.Hour))    // its offset was compacted away
	// Partition 2 has no local state.

	if err := r.restoreTasks(context.Background(), map[string][]int32{"in": {0, 1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(reader.ranges); got != "[{app-totals-changelog 0 5} {app-totals-changelog 1 0} {app-totals-changelog 2 0} {app-totals-changelog 3 4}]" {
		t.Errorf("ranges read: %s", got)
	}
	for p, want := range map[int32]struct {
		old    bool
		offset int64
	}{0: {true, 6}, 1: {false, 1}, 2: {false, 1}, 3: {false, 11}} {
		_, old, err := db.Get("totals", st(p).Task, []byte("old"))
		if err != nil {
			t.Fatal(err)
		}
		_, restored, _ := db.Get("totals", st(p).Task, fmt.Appendf(nil, "k%d", p))
		off, _, _ := db.Offset("totals", st(p).Task)
		owned, _, _ := db.LastOwned("totals", st(p).Task)
		if old != want.old || !restored || off != want.offset || !owned.Equal(now) {
			t.Errorf("task %d: old state kept %v (want %v), restored %v, offset %d (want %d), last owned %v (want %v)",
				p, old, want.old, restored, off, want.offset, owned, now)
		}
	}
	if n := m.wipes.value(); n != 2 {
		t.Errorf("wipes: %d, want 2", n)
	}

	// The state cleanup, two hours later: task 1 is owned, task 2 is being
	// restored by a claim, the others are not owned.
	now = now.Add(2 * time.Hour)
	r.restoringTasks([]statestore.StoreTask{st(2)}, true)
	if err := r.dropUnowned([]statestore.StoreTask{st(1)}); err != nil {
		t.Fatal(err)
	}
	kept := func() string {
		k, err := db.Kept()
		if err != nil {
			t.Fatal(err)
		}
		var ps []int32
		for p := range int32(4) {
			if _, ok := k[st(p)]; ok {
				ps = append(ps, p)
			}
		}
		return fmt.Sprint(ps)
	}
	if got := kept(); got != "[1 2]" {
		t.Errorf("tasks kept by the cleanup: %s, want [1 2]", got)
	}
	r.restoringTasks([]statestore.StoreTask{st(2)}, false)
	if err := r.dropUnowned([]statestore.StoreTask{st(1)}); err != nil {
		t.Fatal(err)
	}
	if got := kept(); got != "[1]" {
		t.Errorf("tasks kept once the restore ended: %s, want [1]", got)
	}

	if r.lacksPartition(st(3)) || !r.lacksPartition(st(4)) {
		t.Errorf("a changelog of 4 partitions: lacks 3 %v, lacks 4 %v; want false, true", r.lacksPartition(st(3)), r.lacksPartition(st(4)))
	}
}
