package engine_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/statestore"
)

// dedupFigures is the dedup state of one task after some retention
// periods of event time.
type dedupFigures struct {
	periods  int
	records  int
	entries  int    // dedup entries left
	live     int64  // their keys, values and expiry index, as a read sees them
	estimate uint64 // the keyspace's tables on disk, Pebble's estimate
	disk     uint64 // every file of the database (tables, WAL, manifest)
	memtable uint64
}

// measureDedup opens the state a stopped replica left in dir and measures
// one dedup store's task.
func measureDedup(t *testing.T, dir, store string, task statestore.Task) dedupFigures {
	t.Helper()
	db, err := statestore.Open(dir, statestore.Options{DedupStores: []string{store}})
	if err != nil {
		t.Fatalf("open state: %v", err)
	}
	defer db.Close()
	var f dedupFigures
	if err := db.Range(store, task, nil, nil, func(_, _ []byte) bool { f.entries++; return true }); err != nil {
		t.Fatal(err)
	}
	if f.live, _, err = db.LiveBytes(store, task, 1<<40); err != nil {
		t.Fatal(err)
	}
	if f.estimate, err = db.Size(store, task); err != nil {
		t.Fatal(err)
	}
	u, err := db.Usage()
	if err != nil {
		t.Fatal(err)
	}
	f.disk, f.memtable = u.Disk, u.MemTable
	return f
}

// dedupPeriods are the checkpoints, in retention periods: 1, 2 and 4, or
// those of ONCEFLOW_DEDUP_PERIODS (comma-separated, increasing).
func dedupPeriods() []int {
	ps := []int{1, 2, 4}
	if s := os.Getenv("ONCEFLOW_DEDUP_PERIODS"); s != "" {
		ps = nil
		for _, f := range strings.Split(s, ",") {
			if n, err := strconv.Atoi(f); err == nil && n > 0 && (len(ps) == 0 || n > ps[len(ps)-1]) {
				ps = append(ps, n)
			}
		}
	}
	return ps
}
