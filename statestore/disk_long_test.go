//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package statestore

import (
	"testing"
	"time"
)

// A state directory closed cleanly occupies on disk (allocated blocks, as
// du counts them) at most twice its data plus diskAllowance: the tables
// hold the data once, plus versions and tombstones a compaction has not
// dropped yet; the write-ahead log is flushed and holds nothing. 100,000
// orders events (the orders topology's four stores, six tasks) are applied
// over four runs, each closed and opened again, as a replica restarted
// three times.
func TestDiskAfterCleanClose(t *testing.T) {
	const events, runs = 100_000, 4
	dir := t.TempDir()
	o := planBenchOrders(t, events)
	per := len(o.events) / runs
	for run := range runs {
		db, err := Open(dir, Options{DedupStores: []string{"event-ids"}})
		if err != nil {
			t.Fatal(err)
		}
		r := &ordersRunner{db: db, offsets: map[StoreTask]int64{}, now: time.UnixMilli(1_700_000_000_000), off: int64(run * 1000)}
		end := (run + 1) * per
		if run == runs-1 {
			end = len(o.events)
		}
		for i := run * per; i < end; i++ {
			if err := r.event(o, &o.events[i]); err != nil {
				t.Fatal(err)
			}
		}
		if r.tx != nil {
			if err := r.apply(); err != nil {
				t.Fatal(err)
			}
		}
		live := liveBytes(t, db)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		allocated, logs, logBytes := duWalk(t, dir)
		t.Logf("run %d, %d events: data %d bytes, allocated %d bytes (%.1f times, %.1f bytes per event), logs %v",
			run+1, end, live, allocated, float64(allocated)/float64(live), float64(allocated)/float64(end), logs)
		if bound := 2*live + diskAllowance; allocated > bound {
			t.Errorf("run %d: %d bytes allocated for %d bytes of data; want at most %d (twice the data plus %d)",
				run+1, allocated, live, bound, diskAllowance)
		}
		if len(logs) > 1 || logBytes > walChunk {
			t.Errorf("run %d: write-ahead log files kept after a clean close: %v, %d bytes; want at most 1, of at most %d bytes",
				run+1, logs, logBytes, walChunk)
		}
	}
}
