package statestore

import (
	"testing"
	"time"
)

// TestDedupLookupSeesLaterWrites checks that a Txn's dedup lookups, which
// go through an iterator the Txn keeps open, see what a restore, a wipe
// or another Txn committed after the iterator opened: a new owner's
// restore may finish while the driver's transaction is open, and the
// restored ids must be found.
func TestDedupLookupSeesLaterWrites(t *testing.T) {
	for _, cache := range []int{0, -1} {
		db := openT(t, "", Options{DedupStores: []string{"ids"}, ReadCacheEntries: cache})
		e := DedupEntry{FirstSeen: time.UnixMilli(1_700_000_000_000), Source: "in/0/1", PayloadHash: [32]byte{1}}
		found := func(tx *Txn, task Task, id string) bool {
			t.Helper()
			_, ok, err := tx.GetDedup("ids", task, []byte(id))
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		tx := db.Begin()
		if found(tx, task0, "x") {
			t.Fatal("x found before it was written")
		}
		if err := db.Restore("ids", task0, []Change{{Key: []byte("x"), Value: EncodeDedup(e)}}, 1); err != nil {
			t.Fatal(err)
		}
		if !found(tx, task0, "x") {
			t.Errorf("cache %d: x not found after a restore wrote it", cache)
		}
		other := db.Begin()
		if err := other.PutDedup("ids", task1, []byte("y"), e); err != nil {
			t.Fatal(err)
		}
		if found(tx, task1, "y") {
			t.Fatal("y found before it was applied")
		}
		mustApply(t, other, map[StoreTask]int64{{"ids", task1}: 1})
		if !found(tx, task1, "y") {
			t.Errorf("cache %d: y not found after another Txn applied it", cache)
		}
		if err := db.Wipe("ids", task0); err != nil {
			t.Fatal(err)
		}
		if found(tx, task0, "x") {
			t.Errorf("cache %d: x found after a wipe", cache)
		}
		tx.Discard()
	}
}

// TestCloseWithOpenDedupLookup closes the database while a Txn that
// looked an id up is still open: the Txn's iterator must not make Close
// fail, and the Txn then reports ErrClosed.
func TestCloseWithOpenDedupLookup(t *testing.T) {
	db, err := Open("", Options{DedupStores: []string{"ids"}})
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Begin()
	if _, _, err := tx.GetDedup("ids", task0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close with a Txn open: %v", err)
	}
	if _, _, err := tx.GetDedup("ids", task0, []byte("x")); err != ErrClosed {
		t.Errorf("GetDedup after Close = %v, want ErrClosed", err)
	}
	tx.Discard()
}
