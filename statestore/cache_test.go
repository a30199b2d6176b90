package statestore

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// txnGet reads k through a fresh Txn, which goes through the read cache.
func txnGet(t *testing.T, db *DB, store string, task Task, k string) (string, bool) {
	t.Helper()
	tx := db.Begin()
	defer tx.Discard()
	v, ok, err := tx.Get(store, task, []byte(k))
	if err != nil {
		t.Fatalf("Txn.Get(%q): %v", k, err)
	}
	return string(v), ok
}

// TestReadCacheFollowsEveryWritePath reads keys into the cache and then
// changes them through each write path: an applied Txn, a discarded one,
// Restore and Wipe. Every later read must see the committed state.
func TestReadCacheFollowsEveryWritePath(t *testing.T) {
	db := openT(t, "", Options{})
	task := Task{SubTopology: 0, Partition: 1}
	st := StoreTask{"counts", task}

	for _, k := range []string{"a", "b"} {
		if v, ok := txnGet(t, db, "counts", task, k); ok {
			t.Fatalf("fresh store: %q = %q", k, v)
		}
	}
	tx := db.Begin()
	mustPut(t, tx, "counts", task, "a", "1")
	mustApply(t, tx, map[StoreTask]int64{st: 1})
	if v, ok := txnGet(t, db, "counts", task, "a"); !ok || v != "1" {
		t.Fatalf("after apply: a = %q, %v; want 1", v, ok)
	}

	tx = db.Begin()
	mustPut(t, tx, "counts", task, "a", "2")
	if err := tx.Delete("counts", task, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := tx.Get("counts", task, []byte("a")); string(v) != "2" {
		t.Fatalf("own write: a = %q; want 2", v)
	}
	tx.Discard()
	if v, ok := txnGet(t, db, "counts", task, "a"); !ok || v != "1" {
		t.Fatalf("after discard: a = %q, %v; want 1", v, ok)
	}

	if err := db.Restore("counts", task, []Change{{Key: []byte("a"), Value: []byte("7")}, {Key: []byte("b"), Value: []byte("8")}}, 5); err != nil {
		t.Fatal(err)
	}
	if v, ok := txnGet(t, db, "counts", task, "a"); !ok || v != "7" {
		t.Fatalf("after restore: a = %q, %v; want 7", v, ok)
	}
	if v, ok := txnGet(t, db, "counts", task, "b"); !ok || v != "8" {
		t.Fatalf("after restore: b = %q, %v; want 8 (an absence was cached before)", v, ok)
	}

	if err := db.Wipe("counts", task); err != nil {
		t.Fatal(err)
	}
	if v, ok := txnGet(t, db, "counts", task, "a"); ok {
		t.Fatalf("after wipe: a = %q", v)
	}
}

// TestReadCacheValuesAreCopies: a caller modifying what Get returned does
// not change what the next reader sees.
func TestReadCacheValuesAreCopies(t *testing.T) {
	db := openT(t, "", Options{})
	task := Task{Partition: 0}
	tx := db.Begin()
	mustPut(t, tx, "s", task, "k", "value")
	mustApply(t, tx, map[StoreTask]int64{{"s", task}: 1})
	for range 2 {
		tx := db.Begin()
		v, _, err := tx.Get("s", task, []byte("k"))
		if err != nil {
			t.Fatal(err)
		}
		copy(v, "XXXXX")
		tx.Discard()
	}
	if v, _ := txnGet(t, db, "s", task, "k"); v != "value" {
		t.Fatalf("k = %q after callers scribbled on their copies", v)
	}
}

// TestReadCacheAgreesWithPebble runs random transactions on a tiny cache
// (so entries are evicted and promoted all the time) and on no cache, and
// compares every read with a model.
func TestReadCacheAgreesWithPebble(t *testing.T) {
	for _, entries := range []int{2, 17, -1} {
		t.Run(fmt.Sprintf("entries=%d", entries), func(t *testing.T) {
			db := openT(t, "", Options{ReadCacheEntries: entries})
			rng := rand.New(rand.NewPCG(1, uint64(entries+10)))
			task := Task{Partition: 3}
			st := StoreTask{"s", task}
			model := map[string]string{}
			for i := range 400 {
				tx := db.Begin()
				pending := map[string]*string{}
				for range 1 + rng.IntN(8) {
					k := fmt.Sprintf("k%d", rng.IntN(40))
					want, wantOK := model[k]
					if p, staged := pending[k]; staged {
						want, wantOK = "", p != nil
						if p != nil {
							want = *p
						}
					}
					v, ok, err := tx.Get("s", task, []byte(k))
					if err != nil {
						t.Fatal(err)
					}
					if ok != wantOK || !bytes.Equal(v, []byte(want)) && ok {
						t.Fatalf("txn %d: %s = %q, %v; want %q, %v", i, k, v, ok, want, wantOK)
					}
					switch rng.IntN(3) {
					case 0:
						nv := fmt.Sprintf("v%d", rng.IntN(1000))
						mustPut(t, tx, "s", task, k, nv)
						pending[k] = &nv
					case 1:
						if err := tx.Delete("s", task, []byte(k)); err != nil {
							t.Fatal(err)
						}
						pending[k] = nil
					}
				}
				if rng.IntN(4) == 0 {
					tx.Discard()
					continue
				}
				mustApply(t, tx, map[StoreTask]int64{st: int64(i + 1)})
				for k, p := range pending {
					if p == nil {
						delete(model, k)
					} else {
						model[k] = *p
					}
				}
			}
		})
	}
}

// TestReadCacheFillLosesToARacingWrite: a reader that missed, read an old
// value and fills after a write updated the key must not put the old value
// back.
func TestReadCacheFillLosesToARacingWrite(t *testing.T) {
	c := newReadCache(8)
	_, hit, epoch := c.get([]byte("k"))
	if hit {
		t.Fatal("hit in an empty cache")
	}
	c.update(maps.All(map[string]cachedValue{"k": {v: []byte("new"), ok: true}}))
	c.fill([]byte("k"), []byte("old"), true, epoch)
	v, hit, _ := c.get([]byte("k"))
	if !hit || string(v.v) != "new" {
		t.Fatalf("k = %q (hit %v); want new", v.v, hit)
	}
	if len(c.cur)+len(c.old) > 2*c.limit {
		t.Fatalf("cache holds %d entries; bound %d", len(c.cur)+len(c.old), 2*c.limit)
	}
}
