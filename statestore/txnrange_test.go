package statestore

import "testing"

// TestTxnRangeSeesWritesBeforeAndAfterIt stages writes in two stores,
// ranges over one, stages more in both, and checks that each Range sees
// every write staged before it: a store's writes reach the batch Range
// reads only once Range is first called on it.
func TestTxnRangeSeesWritesBeforeAndAfterIt(t *testing.T) {
	db := openT(t, "", Options{})
	tx := db.Begin()
	mustPut(t, tx, "s", task0, "a", "1")
	mustPut(t, tx, "s", task1, "a", "other task")
	mustPut(t, tx, "u", task0, "b", "2")
	mustApply(t, tx, map[StoreTask]int64{{"s", task0}: 1, {"s", task1}: 1, {"u", task0}: 1})

	tx = db.Begin()
	defer tx.Discard()
	mustPut(t, tx, "s", task0, "c", "3")
	mustPut(t, tx, "u", task0, "d", "4")
	if err := tx.Delete("s", task0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if got, want := txnRange(t, tx, "s", task0, nil, nil), []kv{{"c", "3"}}; !equalKVs(got, want) {
		t.Errorf("first Range of s = %v, want %v", got, want)
	}
	mustPut(t, tx, "s", task0, "a", "1b")
	mustPut(t, tx, "s", task0, "c", "3b")
	mustPut(t, tx, "u", task0, "e", "5")
	if err := tx.Delete("u", task0, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if got, want := txnRange(t, tx, "s", task0, nil, nil), []kv{{"a", "1b"}, {"c", "3b"}}; !equalKVs(got, want) {
		t.Errorf("second Range of s = %v, want %v", got, want)
	}
	if got, want := txnRange(t, tx, "u", task0, nil, nil), []kv{{"d", "4"}, {"e", "5"}}; !equalKVs(got, want) {
		t.Errorf("first Range of u = %v, want %v", got, want)
	}
	if got, want := txnRange(t, tx, "s", task1, nil, nil), []kv{{"a", "other task"}}; !equalKVs(got, want) {
		t.Errorf("Range of s in another task = %v, want %v", got, want)
	}
}
