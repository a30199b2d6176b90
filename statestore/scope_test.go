package statestore

import (
	"testing"
	"time"
)

// A record scope reads its own writes over the transaction's, rolls back
// to a mark, and moves what is left into the transaction on Commit.
func TestScopeStagesOneRecord(t *testing.T) {
	db := openT(t, "", Options{DedupStores: []string{"ids"}})
	task := Task{SubTopology: 0, Partition: 1}
	tx := db.Begin()
	if err := tx.Put("kv", task, []byte("a"), []byte("txn")); err != nil {
		t.Fatal(err)
	}
	var s Scope
	s.Reset(tx, task)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Put("kv", []byte("b"), []byte("kept")))
	mark := s.Mark()
	must(s.Put("kv", []byte("a"), []byte("rolled back")))
	must(s.Delete("kv", []byte("b")))
	if v, ok, _ := s.Get("kv", []byte("a")); !ok || string(v) != "rolled back" {
		t.Errorf("scope Get(a) = %q %v, want its own write", v, ok)
	}
	if _, ok, _ := s.Get("kv", []byte("b")); ok {
		t.Error("scope Get(b) found a key the scope deleted")
	}
	if v, ok, _ := tx.Get("kv", task, []byte("b")); ok {
		t.Errorf("txn sees the scope's write %q before Commit", v)
	}
	s.Rollback(mark)
	var got []kv
	must(s.Range("kv", nil, nil, func(k, v []byte) bool { got = append(got, kv{string(k), string(v)}); return true }))
	if want := []kv{{"a", "txn"}, {"b", "kept"}}; !equalKVs(got, want) {
		t.Errorf("scope Range after rollback = %v, want %v", got, want)
	}

	// A dedup entry first found absent is staged without reading it back,
	// and still indexed for expiry.
	if _, ok, err := s.GetDedup("ids", []byte("e1")); err != nil || ok {
		t.Fatalf("GetDedup(e1) = %v, %v: want absent", ok, err)
	}
	t0 := time.UnixMilli(1_700_000_000_000)
	must(s.PutDedup("ids", []byte("e1"), DedupEntry{FirstSeen: t0}))
	must(s.Commit())
	if len(s.ops) != 0 {
		t.Errorf("scope holds %d writes after Commit", len(s.ops))
	}
	if got, want := txnRange(t, tx, "kv", task, nil, nil), []kv{{"a", "txn"}, {"b", "kept"}}; !equalKVs(got, want) {
		t.Errorf("txn after Commit = %v, want %v", got, want)
	}
	if latest, ok, err := tx.LatestDedup("ids", task); err != nil || !ok || !latest.Equal(t0) {
		t.Errorf("LatestDedup = %v %v %v, want %v", latest, ok, err, t0)
	}
	expired, err := tx.ExpireDedup("ids", task, t0.Add(time.Millisecond), 0)
	if err != nil || len(expired) != 1 {
		t.Errorf("ExpireDedup = %q, %v: want e1", expired, err)
	}

	// Drop leaves the transaction as it was.
	s.Reset(tx, task)
	must(s.Put("kv", []byte("c"), []byte("dropped")))
	s.Drop()
	must(s.Commit())
	if _, ok, _ := tx.Get("kv", task, []byte("c")); ok {
		t.Error("a dropped write reached the transaction")
	}
}
