package statestore

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func openT(t testing.TB, dir string, opts Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// syncDB makes every write so far durable, MarkOwned's among them, as the
// next synced Apply, Restore or MarkRestored does.
func syncDB(db *DB) error {
	if err := db.check(); err != nil {
		return err
	}
	return db.pdb.LogData(nil, pebble.Sync)
}

// kv is one key/value pair as Range reports it.
type kv struct{ k, v string }

func txnRange(t *testing.T, tx *Txn, store string, task Task, start, end []byte) []kv {
	t.Helper()
	var got []kv
	if err := tx.Range(store, task, start, end, func(k, v []byte) bool {
		got = append(got, kv{string(k), string(v)})
		return true
	}); err != nil {
		t.Fatalf("Txn.Range(%s, %s): %v", store, task, err)
	}
	return got
}

func dbRange(t *testing.T, db *DB, store string, task Task) []kv {
	t.Helper()
	var got []kv
	if err := db.Range(store, task, nil, nil, func(k, v []byte) bool {
		got = append(got, kv{string(k), string(v)})
		return true
	}); err != nil {
		t.Fatalf("DB.Range(%s, %s): %v", store, task, err)
	}
	return got
}

func equalKVs(a, b []kv) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustPut(t testing.TB, tx *Txn, store string, task Task, k, v string) {
	t.Helper()
	if err := tx.Put(store, task, []byte(k), []byte(v)); err != nil {
		t.Fatalf("Put(%s, %s, %q): %v", store, task, k, err)
	}
}

func mustApply(t testing.TB, tx *Txn, offsets map[StoreTask]int64) {
	t.Helper()
	if err := tx.Apply(offsets); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// wantGet checks the committed value of k: want "" with ok false means absent.
func wantGet(t testing.TB, db *DB, store string, task Task, k string, want string, wantOK bool) {
	t.Helper()
	v, ok, err := db.Get(store, task, []byte(k))
	if err != nil {
		t.Fatalf("Get(%s, %s, %q): %v", store, task, k, err)
	}
	if ok != wantOK || (ok && !bytes.Equal(v, []byte(want))) {
		t.Fatalf("Get(%s, %s, %q) = %q, %v; want %q, %v", store, task, k, v, ok, want, wantOK)
	}
}

func wantOffset(t testing.TB, db *DB, store string, task Task, want int64, wantOK bool) {
	t.Helper()
	off, ok, err := db.Offset(store, task)
	if err != nil {
		t.Fatalf("Offset(%s, %s): %v", store, task, err)
	}
	if ok != wantOK || off != want {
		t.Fatalf("Offset(%s, %s) = %d, %v; want %d, %v", store, task, off, ok, want, wantOK)
	}
}

func entry(ms int64, src string) DedupEntry {
	e := DedupEntry{FirstSeen: time.UnixMilli(ms).UTC(), Source: src}
	copy(e.PayloadHash[:], fmt.Sprintf("hash-of-%s", src))
	return e
}
