package statestore

import (
	"testing"
	"time"
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
