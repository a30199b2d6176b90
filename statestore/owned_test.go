package statestore

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A last-owned time survives a reopen, is listed by Kept next to tasks
// that only have an offset, and goes with Wipe.
func TestLastOwnedIsKeptAndWiped(t *testing.T) {
	dir := t.TempDir()
	a := StoreTask{"counts", Task{0, 1}}
	b := StoreTask{"counts", Task{0, 2}}
	at := time.Unix(1_700_000_000, 123)

	db := openT(t, dir, Options{})
	if err := db.Restore(a.Store, a.Task, []Change{{Key: []byte("k"), Value: []byte("v")}}, 5); err != nil {
		t.Fatal(err)
	}
	if err := db.Restore(b.Store, b.Task, nil, 7); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkOwned(at, a); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openT(t, dir, Options{})
	got, ok, err := db.LastOwned(a.Store, a.Task)
	if err != nil || !ok || !got.Equal(at) {
		t.Fatalf("LastOwned(%s) = %v, %v, %v; want %v", a, got, ok, err, at)
	}
	if _, ok, err := db.LastOwned(b.Store, b.Task); err != nil || ok {
		t.Fatalf("LastOwned(%s) = %v, %v; want none", b, ok, err)
	}
	kept, err := db.Kept()
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || !kept[a].Equal(at) || !kept[b].IsZero() {
		t.Fatalf("Kept() = %v; want %s at %v and %s with no time", kept, a, at, b)
	}

	if err := db.Wipe(a.Store, a.Task); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.LastOwned(a.Store, a.Task); err != nil || ok {
		t.Fatalf("LastOwned after Wipe = %v, %v; want none", ok, err)
	}
	if kept, err := db.Kept(); err != nil || len(kept) != 1 {
		t.Fatalf("Kept() after Wipe = %v, %v; want only %s", kept, err, b)
	}
}

// A wipe is durable at once; the mark made after restoring the task must be
// made durable too (Sync), or a crash leaves the task looking never owned
// and the next start wipes and restores it fully again.
func TestSyncMakesTheOwnedMarkSurviveACrash(t *testing.T) {
	for _, synced := range []bool{false, true} {
		t.Run(fmt.Sprintf("synced=%v", synced), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			db, err := openFS("db", fs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := StoreTask{"s", Task{SubTopology: 0, Partition: 1}}
			at := time.UnixMilli(1_700_000_000_000)
			if err := db.MarkOwned(at.Add(-time.Hour), st); err != nil {
				t.Fatal(err)
			}
			if err := db.Wipe(st.Store, st.Task); err != nil { // synced: the old mark is gone for good
				t.Fatal(err)
			}
			if err := db.Restore(st.Store, st.Task, []Change{{Key: []byte("k"), Value: []byte("v")}}, 1); err != nil {
				t.Fatal(err)
			}
			if err := db.MarkOwned(at, st); err != nil {
				t.Fatal(err)
			}
			if synced {
				if err := syncDB(db); err != nil {
					t.Fatal(err)
				}
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
			db2, err := openFS("db", crashed, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			got, ok, err := db2.LastOwned(st.Store, st.Task)
			if err != nil {
				t.Fatal(err)
			}
			if synced && (!ok || !got.Equal(at)) {
				t.Errorf("after Sync and a crash, LastOwned = %v, %v; want %v", got, ok, at)
			}
			if !synced && ok {
				t.Fatalf("the unsynced mark survived the crash (%v): the crash keeps unsynced data, the test would test nothing", got)
			}
			_ = db.Close()
		})
	}
}

// A restore from nothing is dated by its start until MarkRestored ends it
// with a last-owned time; Kept lists whichever is recorded, and Wipe
// removes both.
func TestRestoreStartUntilRestored(t *testing.T) {
	db := openT(t, "", Options{})
	st := StoreTask{"kv", Task{0, 3}}
	began := time.Unix(1_700_000_000, 0)
	restored := began.Add(time.Hour)
	wantMarks := func(when string, restoring, owned time.Time) {
		t.Helper()
		r, rok, err := db.RestoreBegan(st.Store, st.Task)
		if err != nil || rok != !restoring.IsZero() || !r.Equal(restoring) {
			t.Fatalf("%s: RestoreBegan = %v, %v, %v; want %v", when, r, rok, err, restoring)
		}
		o, ook, err := db.LastOwned(st.Store, st.Task)
		if err != nil || ook != !owned.IsZero() || !o.Equal(owned) {
			t.Fatalf("%s: LastOwned = %v, %v, %v; want %v", when, o, ook, err, owned)
		}
		kept, err := db.Kept()
		want := owned
		if want.IsZero() {
			want = restoring
		}
		if err != nil || !kept[st].Equal(want) || want.IsZero() != (len(kept) == 0) {
			t.Fatalf("%s: Kept() = %v, %v; want %s at %v", when, kept, err, st, want)
		}
	}

	if err := db.MarkRestoring(began, st); err != nil {
		t.Fatal(err)
	}
	wantMarks("restoring", began, time.Time{})
	if err := db.MarkRestored(restored, st); err != nil {
		t.Fatal(err)
	}
	wantMarks("restored", time.Time{}, restored)
	if err := db.MarkRestoring(began, st); err != nil {
		t.Fatal(err)
	}
	if err := db.Wipe(st.Store, st.Task); err != nil {
		t.Fatal(err)
	}
	wantMarks("wiped", time.Time{}, time.Time{})
}

// MarkRestored is synced, and with it every unsynced batch a Restorer
// applied before it: after a crash the mark stands with all the state it
// vouches for. A restore cut short before it keeps no last-owned time.
func TestMarkRestoredSyncsTheRestore(t *testing.T) {
	for _, complete := range []bool{false, true} {
		t.Run(fmt.Sprintf("complete=%v", complete), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			db, err := openFS("db", fs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			st := StoreTask{"s", Task{SubTopology: 0, Partition: 1}}
			at := time.UnixMilli(1_700_000_000_000)
			if err := db.MarkRestoring(at, st); err != nil {
				t.Fatal(err)
			}
			r, err := db.NewRestorer(st.Store, st.Task)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if err := r.Apply([]Change{{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}}, int64(i+1)); err != nil {
					t.Fatal(err)
				}
			}
			if complete {
				if err := db.MarkRestored(at, st); err != nil {
					t.Fatal(err)
				}
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
			db2, err := openFS("db", crashed, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			owned, ok, err := db2.LastOwned(st.Store, st.Task)
			if err != nil || ok != complete || complete && !owned.Equal(at) {
				t.Fatalf("after a crash, LastOwned = %v, %v, %v; want a mark: %v", owned, ok, err, complete)
			}
			if complete {
				wantOffset(t, db2, st.Store, st.Task, 5, true)
				if _, ok, err := db2.RestoreBegan(st.Store, st.Task); err != nil || ok {
					t.Fatalf("after MarkRestored and a crash, RestoreBegan = %v, %v; want none", ok, err)
				}
			}
		})
	}
}
