package statestore

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestStore is the behaviour every onceflow state store must show, run
// against the in-memory and the on-disk database.
func TestStore(t *testing.T) {
	for _, backend := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"memory", func(*testing.T) string { return "" }},
		{"disk", func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(backend.name, func(t *testing.T) {
			open := func(t *testing.T, opts Options) *DB { return openT(t, backend.dir(t), opts) }
			t.Run("StagedReadsSeeWrites", func(t *testing.T) { testStagedReads(t, open(t, Options{})) })
			t.Run("DiscardLeavesNothing", func(t *testing.T) { testDiscard(t, open(t, Options{})) })
			t.Run("ApplyNeedsOffsets", func(t *testing.T) { testApplyNeedsOffsets(t, open(t, Options{})) })
			t.Run("RangeIsolation", func(t *testing.T) { testRangeIsolation(t, open(t, Options{})) })
			t.Run("RangeBounds", func(t *testing.T) { testRangeBounds(t, open(t, Options{})) })
			t.Run("RangeCallbackWrites", func(t *testing.T) { testRangeCallbackWrites(t, open(t, Options{})) })
			t.Run("Changes", func(t *testing.T) { testChanges(t, open(t, Options{})) })
			t.Run("RestoreThenGet", func(t *testing.T) { testRestore(t, open(t, Options{})) })
			t.Run("Wipe", func(t *testing.T) { testWipe(t, open(t, Options{DedupStores: []string{"dedup"}})) })
			t.Run("DedupExpiry", func(t *testing.T) { testDedupExpiry(t, open(t, Options{DedupStores: []string{"dedup"}})) })
			t.Run("DedupIndexFollowsWrites", func(t *testing.T) {
				testDedupIndexFollowsWrites(t, open(t, Options{DedupStores: []string{"dedup"}}))
			})
			t.Run("DedupRestoreRebuildsIndex", func(t *testing.T) {
				testDedupRestore(t, open(t, Options{DedupStores: []string{"dedup"}}))
			})
			t.Run("InvalidInput", func(t *testing.T) { testInvalidInput(t, open(t, Options{DedupStores: []string{"dedup"}})) })
			t.Run("Closed", func(t *testing.T) { testClosed(t, open(t, Options{})) })
		})
	}
	t.Run("disk/CloseWithoutApplyThenReopen", testCloseWithoutApply)
	t.Run("disk/ReopenKeepsDataAndOffsets", testReopen)
}

var (
	task0 = Task{SubTopology: 0, Partition: 1}
	task1 = Task{SubTopology: 0, Partition: 10}
)

func testStagedReads(t *testing.T, db *DB) {
	tx := db.Begin()
	mustPut(t, tx, "s", task0, "a", "1")
	mustPut(t, tx, "s", task0, "b", "2")
	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 2})

	tx = db.Begin()
	defer tx.Discard()
	mustPut(t, tx, "s", task0, "c", "3")
	mustPut(t, tx, "s", task0, "a", "1b")
	if err := tx.Delete("s", task0, []byte("b")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k, want string
		ok      bool
	}{{"a", "1b", true}, {"b", "", false}, {"c", "3", true}, {"d", "", false}} {
		v, ok, err := tx.Get("s", task0, []byte(c.k))
		if err != nil || ok != c.ok || string(v) != c.want {
			t.Errorf("Txn.Get(%q) = %q, %v, %v; want %q, %v", c.k, v, ok, err, c.want, c.ok)
		}
	}
	if got, want := txnRange(t, tx, "s", task0, nil, nil), []kv{{"a", "1b"}, {"c", "3"}}; !equalKVs(got, want) {
		t.Errorf("Txn.Range = %v, want %v", got, want)
	}
	// Committed state is untouched until Apply.
	wantGet(t, db, "s", task0, "a", "1", true)
	wantGet(t, db, "s", task0, "b", "2", true)
	wantGet(t, db, "s", task0, "c", "", false)
	if got, want := dbRange(t, db, "s", task0), []kv{{"a", "1"}, {"b", "2"}}; !equalKVs(got, want) {
		t.Errorf("DB.Range = %v, want %v", got, want)
	}

	// Get returns a copy: changing it changes nothing stored.
	v, _, _ := tx.Get("s", task0, []byte("a"))
	v[0] = 'X'
	if v2, _, _ := tx.Get("s", task0, []byte("a")); string(v2) != "1b" {
		t.Errorf("staged value changed through a returned copy: %q", v2)
	}

	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 5})
	wantGet(t, db, "s", task0, "a", "1b", true)
	wantGet(t, db, "s", task0, "b", "", false)
	wantGet(t, db, "s", task0, "c", "3", true)
	wantOffset(t, db, "s", task0, 5, true)
}

func testDiscard(t *testing.T, db *DB) {
	tx := db.Begin()
	mustPut(t, tx, "s", task0, "a", "1")
	tx.Discard()
	tx.Discard() // a no-op
	wantGet(t, db, "s", task0, "a", "", false)
	wantOffset(t, db, "s", task0, 0, false)
	if tx.Len() != 0 || !tx.Empty() || tx.Changes() != nil {
		t.Errorf("after Discard: Len %d, Empty %v, Changes %v", tx.Len(), tx.Empty(), tx.Changes())
	}
	for name, err := range map[string]error{
		"Put":    tx.Put("s", task0, []byte("a"), []byte("1")),
		"Delete": tx.Delete("s", task0, []byte("a")),
		"Apply":  tx.Apply(nil),
		"Range":  tx.Range("s", task0, nil, nil, func(_, _ []byte) bool { return true }),
	} {
		if !errors.Is(err, ErrTxnDone) {
			t.Errorf("%s after Discard: %v, want ErrTxnDone", name, err)
		}
	}
	if _, _, err := tx.Get("s", task0, []byte("a")); !errors.Is(err, ErrTxnDone) {
		t.Errorf("Get after Discard: %v, want ErrTxnDone", err)
	}

	// After Apply too.
	tx = db.Begin()
	mustApply(t, tx, nil)
	if err := tx.Put("s", task0, []byte("a"), nil); !errors.Is(err, ErrTxnDone) {
		t.Errorf("Put after Apply: %v, want ErrTxnDone", err)
	}
	if err := tx.Apply(nil); !errors.Is(err, ErrTxnDone) {
		t.Errorf("second Apply: %v, want ErrTxnDone", err)
	}
}

func testApplyNeedsOffsets(t *testing.T, db *DB) {
	tx := db.Begin()
	mustPut(t, tx, "s", task0, "a", "1")
	mustPut(t, tx, "s", task1, "a", "2")
	err := tx.Apply(map[StoreTask]int64{{"s", task0}: 1})
	if !errors.Is(err, ErrMissingOffset) {
		t.Fatalf("Apply without an offset for a changed task: %v, want ErrMissingOffset", err)
	}
	err = tx.Apply(map[StoreTask]int64{{"s", task0}: 1, {"s", task1}: -1})
	if !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("Apply with a negative offset: %v, want ErrInvalidOffset", err)
	}
	// Refused input leaves the Txn open and nothing written.
	wantGet(t, db, "s", task0, "a", "", false)
	wantOffset(t, db, "s", task0, 0, false)
	if tx.Len() != 2 {
		t.Fatalf("Len after refused Apply = %d, want 2", tx.Len())
	}
	// Offsets of unchanged pairs are recorded too.
	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 1, {"s", task1}: 7, {"other", task0}: 3})
	wantGet(t, db, "s", task1, "a", "2", true)
	wantOffset(t, db, "s", task1, 7, true)
	wantOffset(t, db, "other", task0, 3, true)

	// An empty Txn can still move offsets.
	tx = db.Begin()
	if !tx.Empty() {
		t.Fatal("new Txn not Empty")
	}
	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 9})
	wantOffset(t, db, "s", task0, 9, true)
}

func testRangeIsolation(t *testing.T, db *DB) {
	stores := []string{"a", "ab", "b"}
	tasks := []Task{{0, 1}, {0, 10}, {1, 1}, {1, 0}, {256, 1}}
	offsets := map[StoreTask]int64{}
	tx := db.Begin()
	for _, s := range stores {
		for _, tk := range tasks {
			// Keys that would collide if prefixes overlapped: the user key
			// of one keyspace spelling the tail of another's prefix.
			for _, k := range []string{"", "\x00", "b\x00\x00\x00\x00\x00\x00\x00\x01k", "k", "\xff\xff"} {
				mustPut(t, tx, s, tk, k, s+"/"+tk.String()+"/"+k)
			}
			offsets[StoreTask{s, tk}] = 5
		}
	}
	check := func(name string, rng func(string, Task) []kv) {
		for _, s := range stores {
			for _, tk := range tasks {
				got := rng(s, tk)
				var want []kv
				for _, k := range []string{"", "\x00", "b\x00\x00\x00\x00\x00\x00\x00\x01k", "k", "\xff\xff"} {
					want = append(want, kv{k, s + "/" + tk.String() + "/" + k})
				}
				if !equalKVs(got, want) {
					t.Errorf("%s(%s, %s) = %q, want %q", name, s, tk, got, want)
				}
			}
		}
	}
	check("Txn.Range", func(s string, tk Task) []kv { return txnRange(t, tx, s, tk, nil, nil) })
	mustApply(t, tx, offsets)
	check("DB.Range", func(s string, tk Task) []kv { return dbRange(t, db, s, tk) })
	if got := dbRange(t, db, "c", Task{0, 1}); len(got) != 0 {
		t.Errorf("Range of an unused store = %q", got)
	}
}

func testRangeBounds(t *testing.T, db *DB) {
	tx := db.Begin()
	for _, k := range []string{"a", "b", "c", "d"} {
		mustPut(t, tx, "s", task0, k, k)
	}
	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 4})
	tx = db.Begin()
	defer tx.Discard()
	mustPut(t, tx, "s", task0, "bb", "bb")
	for _, c := range []struct {
		start, end []byte
		stopAfter  int
		want       string
	}{
		{nil, nil, 0, "a b bb c d"},
		{[]byte("b"), nil, 0, "b bb c d"},
		{nil, []byte("c"), 0, "a b bb"},
		{[]byte("b"), []byte("c"), 0, "b bb"},
		{[]byte("bz"), []byte("c"), 0, ""},
		{[]byte("c"), []byte("b"), 0, ""},
		{[]byte("c"), []byte("c"), 0, ""},
		{nil, nil, 2, "a b"},
	} {
		var got []string
		err := tx.Range("s", task0, c.start, c.end, func(k, _ []byte) bool {
			got = append(got, string(k))
			return c.stopAfter == 0 || len(got) < c.stopAfter
		})
		if err != nil {
			t.Fatal(err)
		}
		if s := fmt.Sprint(got); s != "["+c.want+"]" {
			t.Errorf("Range(%q, %q, stop %d) = %s, want [%s]", c.start, c.end, c.stopAfter, s, c.want)
		}
	}
}

func testRangeCallbackWrites(t *testing.T, db *DB) {
	tx := db.Begin()
	for i := range 50 {
		mustPut(t, tx, "s", task0, fmt.Sprintf("k%02d", i), "v")
	}
	n := 0
	err := tx.Range("s", task0, nil, nil, func(k, _ []byte) bool {
		n++
		if err := tx.Delete("s", task0, k); err != nil {
			t.Fatal(err)
		}
		return tx.Put("s", task0, append([]byte("z"), k...), []byte("moved")) == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 50 {
		t.Fatalf("Range visited %d keys while writing, want 50", n)
	}
	got := txnRange(t, tx, "s", task0, nil, nil)
	if len(got) != 50 || got[0].k != "zk00" {
		t.Fatalf("after moving: %d keys, first %v", len(got), got[0])
	}
	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 150})
	if got := dbRange(t, db, "s", task0); len(got) != 50 {
		t.Fatalf("committed %d keys, want 50", len(got))
	}
}

func testChanges(t *testing.T, db *DB) {
	tx := db.Begin()
	defer tx.Discard()
	key := []byte("k1")
	val := []byte("v1")
	if err := tx.Put("s", task0, key, val); err != nil {
		t.Fatal(err)
	}
	key[1], val[1] = '9', '9' // the Txn copied them
	if err := tx.Delete("s", task1, []byte("k2")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put("t", task0, []byte("k3"), nil); err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Store: "s", Task: task0, Key: []byte("k1"), Value: []byte("v1")},
		{Store: "s", Task: task1, Key: []byte("k2"), Tombstone: true},
		{Store: "t", Task: task0, Key: []byte("k3"), Value: []byte{}},
	}
	got := tx.Changes()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Changes = %+v\nwant %+v", got, want)
	}
	if got[1].Value != nil || got[2].Value == nil {
		t.Errorf("tombstone Value %v (want nil), empty Put Value %v (want non-nil)", got[1].Value, got[2].Value)
	}
	if tx.Len() != 3 || tx.Empty() {
		t.Errorf("Len %d, Empty %v", tx.Len(), tx.Empty())
	}
	// Changes only grow: what was returned before is a prefix of what
	// comes after, so a runtime can send the new tail as it goes.
	if err := tx.Put("s", task0, []byte("k1"), []byte("v2")); err != nil {
		t.Fatal(err)
	}
	later := tx.Changes()
	if len(later) != 4 || !reflect.DeepEqual(later[:3], want) || string(later[3].Value) != "v2" {
		t.Fatalf("Changes after one more Put = %+v", later)
	}
	if string(got[0].Value) != "v1" {
		t.Fatalf("an earlier Change was modified: %+v", got[0])
	}
}

func testRestore(t *testing.T, db *DB) {
	st := StoreTask{"s", task0}
	records := []Change{
		{Key: []byte("a"), Value: []byte("1")},
		{Key: []byte("b"), Value: []byte("2")},
		{Key: []byte("a"), Tombstone: true},
		{Key: []byte("c"), Value: []byte("3")},
		{Key: []byte("b"), Value: []byte("2b")},
		{Key: []byte("e"), Value: nil}, // an empty value, not a tombstone
	}
	// Replayed in two batches.
	if err := db.Restore(st.Store, st.Task, records[:3], 3); err != nil {
		t.Fatal(err)
	}
	wantOffset(t, db, st.Store, st.Task, 3, true)
	if err := db.Restore(st.Store, st.Task, records[3:], 8); err != nil { // 8: commit markers take offsets
		t.Fatal(err)
	}
	want := []kv{{"b", "2b"}, {"c", "3"}, {"e", ""}}
	if got := dbRange(t, db, st.Store, st.Task); !equalKVs(got, want) {
		t.Fatalf("after restore: %q, want %q", got, want)
	}
	wantGet(t, db, st.Store, st.Task, "a", "", false)
	wantOffset(t, db, st.Store, st.Task, 8, true)

	// Replaying from any earlier point converges to the same state.
	for from := range records {
		if err := db.Restore(st.Store, st.Task, records[from:], 8); err != nil {
			t.Fatal(err)
		}
		if got := dbRange(t, db, st.Store, st.Task); !equalKVs(got, want) {
			t.Fatalf("replay from %d: %q, want %q", from, got, want)
		}
	}
	// Other keyspaces untouched; an empty batch just moves the offset.
	if got := dbRange(t, db, st.Store, task1); len(got) != 0 {
		t.Errorf("restore leaked into %s: %q", task1, got)
	}
	if err := db.Restore(st.Store, task1, nil, 4); err != nil {
		t.Fatal(err)
	}
	wantOffset(t, db, st.Store, task1, 4, true)
	if err := db.Restore(st.Store, st.Task, records, -1); !errors.Is(err, ErrInvalidOffset) {
		t.Errorf("Restore with next -1: %v, want ErrInvalidOffset", err)
	}
}

func testWipe(t *testing.T, db *DB) {
	tx := db.Begin()
	offsets := map[StoreTask]int64{}
	for _, s := range []string{"s", "s2"} {
		for _, tk := range []Task{task0, task1} {
			mustPut(t, tx, s, tk, "k", "v")
			offsets[StoreTask{s, tk}] = 1
		}
	}
	for _, tk := range []Task{task0, task1} {
		if err := tx.PutDedup("dedup", tk, []byte("id"), entry(1000, "t/0/1")); err != nil {
			t.Fatal(err)
		}
		offsets[StoreTask{"dedup", tk}] = 1
	}
	mustApply(t, tx, offsets)

	for _, st := range []StoreTask{{"s", task0}, {"dedup", task0}} {
		if err := db.Wipe(st.Store, st.Task); err != nil {
			t.Fatal(err)
		}
	}
	for st := range offsets {
		wiped := st == StoreTask{"s", task0} || st == StoreTask{"dedup", task0}
		if got := dbRange(t, db, st.Store, st.Task); (len(got) == 0) != wiped {
			t.Errorf("%s after wipe: %q (wiped: %v)", st, got, wiped)
		}
		wantOffset(t, db, st.Store, st.Task, map[bool]int64{false: 1}[wiped], !wiped)
	}
	tasks, err := db.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	want := []StoreTask{{"s", task1}, {"s2", task0}, {"s2", task1}, {"dedup", task1}}
	if !slices.Equal(tasks, want) {
		t.Errorf("Tasks after wipe = %v, want %v", tasks, want)
	}
	// The wiped dedup task's index went too: nothing left to expire there,
	// while the other task's entry still expires.
	tx = db.Begin()
	defer tx.Discard()
	for tk, want := range map[Task]int{task0: 0, task1: 1} {
		ids, err := tx.ExpireDedup("dedup", tk, time.UnixMilli(5000), 0)
		if err != nil || len(ids) != want {
			t.Errorf("ExpireDedup(%s) after wipe = %q, %v; want %d ids", tk, ids, err, want)
		}
	}
}

func testDedupExpiry(t *testing.T, db *DB) {
	tx := db.Begin()
	// Ten entries, one per second of event time, inserted out of order, plus
	// the same times in another task.
	for _, i := range []int64{7, 2, 9, 0, 5, 3, 8, 1, 6, 4} {
		for _, tk := range []Task{task0, task1} {
			if err := tx.PutDedup("dedup", tk, fmt.Appendf(nil, "id-%d", i), entry(1_000_000+i*1000, fmt.Sprintf("in/0/%d", i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustApply(t, tx, map[StoreTask]int64{{"dedup", task0}: 10, {"dedup", task1}: 10})

	tx = db.Begin()
	// Staged entries count too: one older than all the committed ones.
	if err := tx.PutDedup("dedup", task0, []byte("id-staged"), entry(500_000, "in/0/99")); err != nil {
		t.Fatal(err)
	}
	before := time.UnixMilli(1_005_000) // ids 0..4 are older; id-5 is exactly at the cutoff
	ids, err := tx.ExpireDedup("dedup", task0, before, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%s", ids), "[id-staged id-0 id-1]"; got != want {
		t.Fatalf("ExpireDedup limit 3 = %s, want %s (oldest first)", got, want)
	}
	ids, err = tx.ExpireDedup("dedup", task0, before, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%s", ids), "[id-2 id-3 id-4]"; got != want {
		t.Fatalf("ExpireDedup no limit = %s, want %s", got, want)
	}
	if ids, _ := tx.ExpireDedup("dedup", task0, before, 0); len(ids) != 0 {
		t.Fatalf("second ExpireDedup = %s, want none", ids)
	}
	changes := tx.Changes()
	var tombstones []string
	for _, c := range changes[1:] {
		if !c.Tombstone || c.Store != "dedup" || c.Task != task0 || c.Value != nil {
			t.Errorf("expiry change %+v is not a tombstone of dedup/%s", c, task0)
		}
		tombstones = append(tombstones, string(c.Key))
	}
	if got, want := fmt.Sprint(tombstones), "[id-staged id-0 id-1 id-2 id-3 id-4]"; got != want {
		t.Errorf("tombstones %s, want %s", got, want)
	}
	mustApply(t, tx, map[StoreTask]int64{{"dedup", task0}: 17})

	for i := range 10 {
		id := fmt.Sprintf("id-%d", i)
		_, ok, err := db.Get("dedup", task0, []byte(id))
		if err != nil || ok != (i >= 5) {
			t.Errorf("%s present %v (err %v), want %v", id, ok, err, i >= 5)
		}
		if _, ok, _ := db.Get("dedup", task1, []byte(id)); !ok {
			t.Errorf("%s expired from the other task", id)
		}
	}
	tx = db.Begin()
	defer tx.Discard()
	e, ok, err := tx.GetDedup("dedup", task0, []byte("id-5"))
	if err != nil || !ok || !e.FirstSeen.Equal(time.UnixMilli(1_005_000)) || e.Source != "in/0/5" {
		t.Errorf("GetDedup(id-5) = %+v, %v, %v", e, ok, err)
	}
}

func testDedupIndexFollowsWrites(t *testing.T, db *DB) {
	tx := db.Begin()
	id := []byte("id")
	if err := tx.PutDedup("dedup", task0, id, entry(1000, "a")); err != nil {
		t.Fatal(err)
	}
	// Moving an entry to a later time moves its index entry.
	if err := tx.PutDedup("dedup", task0, id, entry(9000, "b")); err != nil {
		t.Fatal(err)
	}
	// A plain Put of an encoded entry is indexed too; a Delete unindexes.
	if err := tx.Put("dedup", task0, []byte("other"), EncodeDedup(entry(2000, "c"))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete("dedup", task0, []byte("other")); err != nil {
		t.Fatal(err)
	}
	mustApply(t, tx, map[StoreTask]int64{{"dedup", task0}: 4})

	tx = db.Begin()
	defer tx.Discard()
	if ids, err := tx.ExpireDedup("dedup", task0, time.UnixMilli(5000), 0); err != nil || len(ids) != 0 {
		t.Fatalf("ExpireDedup before 5s = %q, %v; want nothing (id moved to 9s, other deleted)", ids, err)
	}
	if ids, err := tx.ExpireDedup("dedup", task0, time.UnixMilli(9001), 0); err != nil || fmt.Sprintf("%s", ids) != "[id]" {
		t.Fatalf("ExpireDedup before 9.001s = %q, %v; want [id]", ids, err)
	}
	if tx.Len() != 1 {
		t.Errorf("Len = %d, want 1 (one tombstone)", tx.Len())
	}
}

func testDedupRestore(t *testing.T, db *DB) {
	records := []Change{
		{Key: []byte("x"), Value: EncodeDedup(entry(1000, "a"))},
		{Key: []byte("y"), Value: EncodeDedup(entry(2000, "b"))},
		{Key: []byte("x"), Value: EncodeDedup(entry(8000, "c"))}, // moves x
		{Key: []byte("z"), Value: EncodeDedup(entry(3000, "d"))},
		{Key: []byte("z"), Tombstone: true},
	}
	if err := db.Restore("dedup", task0, records[:2], 2); err != nil {
		t.Fatal(err)
	}
	if err := db.Restore("dedup", task0, records[2:], 5); err != nil {
		t.Fatal(err)
	}
	// A corrupt record fails the whole batch.
	bad := []Change{{Key: []byte("w"), Value: EncodeDedup(entry(100, "e"))}, {Key: []byte("v"), Value: []byte("junk")}}
	if err := db.Restore("dedup", task0, bad, 7); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Restore with an undecodable dedup value: %v, want ErrCorrupt", err)
	}
	wantGet(t, db, "dedup", task0, "w", "", false)
	wantOffset(t, db, "dedup", task0, 5, true)

	tx := db.Begin()
	defer tx.Discard()
	ids, err := tx.ExpireDedup("dedup", task0, time.UnixMilli(10_000), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s", ids); got != "[y x]" {
		t.Fatalf("ExpireDedup after restore = %s, want [y x] (index rebuilt, ordered by time)", got)
	}
}

func testInvalidInput(t *testing.T, db *DB) {
	tx := db.Begin()
	defer tx.Discard()
	long := string(make([]byte, MaxStoreNameLen+1))
	for _, c := range []struct {
		name  string
		store string
		task  Task
		want  error
	}{
		{"empty store", "", task0, ErrInvalidStore},
		{"long store", long, task0, ErrInvalidStore},
		{"negative partition", "s", Task{0, -1}, ErrInvalidTask},
		{"negative sub-topology", "s", Task{-1, 0}, ErrInvalidTask},
		{"sub-topology over 32 bits", "s", Task{1 << 32, 0}, ErrInvalidTask},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := map[string]error{
				"Txn.Put":    tx.Put(c.store, c.task, []byte("k"), nil),
				"Txn.Delete": tx.Delete(c.store, c.task, []byte("k")),
				"Txn.Range":  tx.Range(c.store, c.task, nil, nil, nil),
				"Txn.Apply":  tx.Apply(map[StoreTask]int64{{c.store, c.task}: 1}),
				"Restore":    db.Restore(c.store, c.task, nil, 1),
				"Wipe":       db.Wipe(c.store, c.task),
				"DB.Range":   db.Range(c.store, c.task, nil, nil, nil),
			}
			_, _, errs["Txn.Get"] = tx.Get(c.store, c.task, nil)
			_, _, errs["DB.Get"] = db.Get(c.store, c.task, nil)
			_, _, errs["Offset"] = db.Offset(c.store, c.task)
			for name, err := range errs {
				if !errors.Is(err, c.want) {
					t.Errorf("%s: %v, want %v", name, err, c.want)
				}
			}
		})
	}
	if tx.Len() != 0 {
		t.Errorf("refused writes were staged: %d", tx.Len())
	}
	if err := tx.PutDedup("s", task0, []byte("id"), DedupEntry{}); !errors.Is(err, ErrNotDedupStore) {
		t.Errorf("PutDedup on a plain store: %v, want ErrNotDedupStore", err)
	}
	if _, err := tx.ExpireDedup("s", task0, time.Now(), 0); !errors.Is(err, ErrNotDedupStore) {
		t.Errorf("ExpireDedup on a plain store: %v, want ErrNotDedupStore", err)
	}
	if err := tx.Put("dedup", task0, []byte("id"), []byte("not an entry")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Put of a non-entry into a dedup store: %v, want ErrCorrupt", err)
	}
	if tx.Len() != 0 {
		t.Errorf("refused writes were staged: %d", tx.Len())
	}
}

func testClosed(t *testing.T, db *DB) {
	open := db.Begin()
	mustPut(t, open, "s", task0, "a", "1")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	late := db.Begin()
	errs := map[string]error{
		"open Txn.Put":   open.Put("s", task0, []byte("b"), nil),
		"open Txn.Apply": open.Apply(map[StoreTask]int64{{"s", task0}: 1}),
		"late Txn.Put":   late.Put("s", task0, []byte("b"), nil),
		"Restore":        db.Restore("s", task0, nil, 1),
		"Wipe":           db.Wipe("s", task0),
	}
	_, _, errs["Get"] = db.Get("s", task0, nil)
	_, _, errs["Offset"] = db.Offset("s", task0)
	_, errs["Tasks"] = db.Tasks()
	for name, err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	open.Discard()
	late.Discard()
}

// testCloseWithoutApply is a crash between staging and Apply: the process
// goes away with a Txn open. Nothing of it may be on disk, and the offset
// must not have moved.
func testCloseWithoutApply(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Begin()
	mustPut(t, tx, "s", task0, "a", "1")
	mustPut(t, tx, "s", task0, "b", "2")
	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 2})

	tx = db.Begin()
	mustPut(t, tx, "s", task0, "a", "changed")
	mustPut(t, tx, "s", task0, "c", "3")
	mustPut(t, tx, "s", task1, "d", "4")
	if err := tx.Delete("s", task0, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openT(t, dir, Options{})
	if got, want := dbRange(t, db, "s", task0), []kv{{"a", "1"}, {"b", "2"}}; !equalKVs(got, want) {
		t.Errorf("after reopen: %q, want %q", got, want)
	}
	if got := dbRange(t, db, "s", task1); len(got) != 0 {
		t.Errorf("after reopen, unapplied task has %q", got)
	}
	wantOffset(t, db, "s", task0, 2, true)
	wantOffset(t, db, "s", task1, 0, false)
}

func testReopen(t *testing.T) {
	dir := t.TempDir()
	opts := Options{DedupStores: []string{"dedup"}}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Begin()
	mustPut(t, tx, "s", task0, "a", "1")
	mustPut(t, tx, "s", task1, "a", "2")
	if err := tx.PutDedup("dedup", task0, []byte("id"), entry(1000, "x")); err != nil {
		t.Fatal(err)
	}
	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 11, {"s", task1}: 12, {"dedup", task0}: 13})
	if err := db.Restore("r", task0, []Change{{Key: []byte("k"), Value: []byte("v")}}, 14); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openT(t, dir, opts)
	wantGet(t, db, "s", task0, "a", "1", true)
	wantGet(t, db, "s", task1, "a", "2", true)
	wantGet(t, db, "r", task0, "k", "v", true)
	for st, off := range map[StoreTask]int64{{"s", task0}: 11, {"s", task1}: 12, {"dedup", task0}: 13, {"r", task0}: 14} {
		wantOffset(t, db, st.Store, st.Task, off, true)
	}
	tasks, err := db.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if want := []StoreTask{{"r", task0}, {"s", task0}, {"s", task1}, {"dedup", task0}}; !slices.Equal(tasks, want) {
		t.Errorf("Tasks = %v, want %v", tasks, want)
	}
	tx = db.Begin()
	defer tx.Discard()
	if ids, err := tx.ExpireDedup("dedup", task0, time.UnixMilli(2000), 0); err != nil || len(ids) != 1 {
		t.Errorf("ExpireDedup after reopen = %q, %v; want the one entry (index persisted)", ids, err)
	}
}
