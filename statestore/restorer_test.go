package statestore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// restoreLog is a dedup changelog of 10 batches of 50 records: ids
// id-000..id-399 first seen at 1,000 ms plus their number, then ids
// id-000..id-079 again, first seen at 10,000 ms (their index entries move),
// and tombstones for id-080..id-099. next after batch i is 50*(i+1).
func restoreLog() [][]Change {
	var all []Change
	for i := range 400 {
		all = append(all, Change{Key: fmt.Appendf(nil, "id-%03d", i), Value: EncodeDedup(entry(1000+int64(i), "a"))})
	}
	for i := range 80 {
		all = append(all, Change{Key: fmt.Appendf(nil, "id-%03d", i), Value: EncodeDedup(entry(10_000, "b"))})
	}
	for i := 80; i < 100; i++ {
		all = append(all, Change{Key: fmt.Appendf(nil, "id-%03d", i), Tombstone: true})
	}
	var batches [][]Change
	for c := range slices.Chunk(all, 50) {
		batches = append(batches, c)
	}
	return batches
}

// keysAfter returns the ids the first n records of log leave, sorted.
func keysAfter(log [][]Change, n int) []string {
	live := map[string]bool{}
	for _, c := range slices.Concat(log...)[:n] {
		live[string(c.Key)] = !c.Tombstone
	}
	var out []string
	for k, ok := range live {
		if ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// A Restorer does not sync its batches. A crash at any point keeps a prefix
// of them, each whole with the offset it reaches: the state on disk is
// exactly the changelog up to the offset it records, and a restore resumed
// from there ends with the whole changelog's state and a correct expiry
// index.
func TestRestorerCrashKeepsAPrefixThatResumes(t *testing.T) {
	log := restoreLog()
	st := StoreTask{"dedup", Task{SubTopology: 0, Partition: 3}}
	opts := Options{DedupStores: []string{"dedup"}}
	for _, pct := range []int{0, 30, 70, 100} {
		for seed := range int64(3) {
			t.Run(fmt.Sprintf("unsynced=%d%%/seed=%d", pct, seed), func(t *testing.T) {
				fs := vfs.NewCrashableMem()
				db, err := openFS("db", fs, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				r, err := db.NewRestorer(st.Store, st.Task)
				if err != nil {
					t.Fatal(err)
				}
				for i, b := range log {
					if err := r.Apply(b, int64(50*(i+1))); err != nil {
						t.Fatal(err)
					}
					if i == 3 { // the first 200 records are durable
						if err := syncDB(db); err != nil {
							t.Fatal(err)
						}
					}
				}
				crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rand.New(rand.NewPCG(uint64(seed), 1))})
				db2, err := openFS("db", crashed, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer db2.Close()
				off, ok, err := db2.Offset(st.Store, st.Task)
				if err != nil {
					t.Fatal(err)
				}
				if !ok || off < 200 || off%50 != 0 {
					t.Fatalf("offset %d, %v after the crash; want 200 (synced) or a later batch's", off, ok)
				}
				t.Logf("a crash keeping %d%% of the unsynced writes left offset %d", pct, off)
				if got, want := dbKeys(t, db2, st), keysAfter(log, int(off)); !slices.Equal(got, want) {
					t.Fatalf("after the crash at offset %d: %d keys, want the %d of the changelog up to it", off, len(got), len(want))
				}
				// Resume from the recorded offset, as the runtime does.
				r2, err := db2.NewRestorer(st.Store, st.Task)
				if err != nil {
					t.Fatal(err)
				}
				for i := int(off / 50); i < len(log); i++ {
					if err := r2.Apply(log[i], int64(50*(i+1))); err != nil {
						t.Fatal(err)
					}
				}
				if err := syncDB(db2); err != nil {
					t.Fatal(err)
				}
				wantOffset(t, db2, st.Store, st.Task, 500, true)
				if got, want := dbKeys(t, db2, st), keysAfter(log, 500); !slices.Equal(got, want) {
					t.Fatalf("resumed: %d keys, want %d", len(got), len(want))
				}
				checkIndex(t, db2, st)
			})
		}
	}
}

// A cold Restorer skips the reads of keys it has not written, a warm one
// reads them: both rebuild the same expiry index, where a key written
// twice is indexed at its last first-seen time only.
func TestRestorerRebuildsTheExpiryIndex(t *testing.T) {
	log := restoreLog()
	st := StoreTask{"dedup", Task{SubTopology: 0, Partition: 0}}
	db := openT(t, "", Options{DedupStores: []string{"dedup"}})
	if err := db.Restore(st.Store, st.Task, log[0][:1], 1); err != nil { // warm: the keyspace holds id-000
		t.Fatal(err)
	}
	cold := StoreTask{"dedup", Task{SubTopology: 0, Partition: 1}}
	for _, s := range []StoreTask{st, cold} {
		r, err := db.NewRestorer(s.Store, s.Task)
		if err != nil {
			t.Fatal(err)
		}
		if s == cold != r.complete {
			t.Fatalf("%s: skips reads %v, want %v (cold restore)", s, r.complete, s == cold)
		}
		for i, b := range log {
			if err := r.Apply(b, int64(50*(i+1))); err != nil {
				t.Fatal(err)
			}
		}
		checkIndex(t, db, s)
	}
}

// dbKeys lists st's keys, sorted.
func dbKeys(t *testing.T, db *DB, st StoreTask) []string {
	t.Helper()
	var out []string
	for _, e := range dbRange(t, db, st.Store, st.Task) {
		out = append(out, e.k)
	}
	return out
}

// checkIndex expires everything first seen before 10,000 ms: exactly
// id-100..id-399 (id-000..id-079 were seen again at 10,000, id-080..id-099
// are gone); a stale index entry would expire a live id or count a deleted
// one.
func checkIndex(t *testing.T, db *DB, st StoreTask) {
	t.Helper()
	tx := db.Begin()
	defer tx.Discard()
	expired, err := tx.ExpireDedup(st.Store, st.Task, time.UnixMilli(10_000), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(expired) != 300 || string(expired[0]) != "id-100" || string(expired[299]) != "id-399" {
		t.Fatalf("%s: expired %d ids (%q..), want id-100..id-399", st, len(expired), expired[:min(len(expired), 3)])
	}
}
