package statestore

import (
	"testing"
	"time"
)

// A dedup entry a scope stages for an id it found absent (so it skips
// reading the entry back) is indexed like PutDedup's: the entry expires and
// its tombstone goes to the changelog.
func TestNewDedupEntryFromAScopeIndexes(t *testing.T) {
	db, err := Open("", Options{DedupStores: []string{"d"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	task := Task{Partition: 1}
	t0 := time.UnixMilli(1_000_000)
	txn := db.Begin()
	var s Scope
	s.Reset(txn, task)
	if _, ok, err := s.GetDedup("d", []byte("e1")); err != nil || ok {
		t.Fatalf("GetDedup(e1) = %v, %v; want absent", ok, err)
	}
	if err := s.PutDedup("d", []byte("e1"), DedupEntry{FirstSeen: t0, Source: "in/1/0"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := txn.PutDedup("d", task, []byte("e2"), DedupEntry{FirstSeen: t0.Add(time.Hour), Source: "in/1/1"}); err != nil {
		t.Fatal(err)
	}
	expired, err := txn.ExpireDedup("d", task, t0.Add(time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(expired) != 1 || string(expired[0]) != "e1" {
		t.Fatalf("expired %q, want [e1]", expired)
	}
	if _, ok, _ := txn.GetDedup("d", task, []byte("e1")); ok {
		t.Error("e1 still there after expiry")
	}
	if _, ok, _ := txn.GetDedup("d", task, []byte("e2")); !ok {
		t.Error("e2 expired too early")
	}
	if c := txn.Changes(); len(c) != 3 || !c[2].Tombstone {
		t.Errorf("changes %+v, want two puts and a tombstone", c)
	}
}
