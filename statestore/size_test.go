package statestore

import (
	"bytes"
	"fmt"
	"testing"
)

// blockSlack is how far Size may be off for one keyspace: a block (4 KB by
// default) and its share of the index.
const blockSlack = 5000

// Size estimates each keyspace on its own: a flushed store of one task
// weighs about what was written to it, another task and another store of
// the same task weigh nothing, and Usage sees the memtable before the
// flush and the files after it.
func TestSizePerKeyspace(t *testing.T) {
	db := openT(t, t.TempDir(), Options{DedupStores: []string{"seen"}})
	big, small := Task{0, 1}, Task{0, 2}
	tx := db.Begin()
	value := bytes.Repeat([]byte("v"), 1000)
	for i := range 200 {
		if err := tx.Put("totals", big, fmt.Appendf(nil, "k%04d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Put("totals", small, []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(map[StoreTask]int64{{"totals", big}: 200, {"totals", small}: 1}); err != nil {
		t.Fatal(err)
	}
	u, err := db.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.MemTable < 200*1000 {
		t.Errorf("memtable bytes before the flush: %d, want at least 200 KB", u.MemTable)
	}
	if n, err := db.Size("totals", big); err != nil || n != 0 {
		t.Errorf("size before the flush: %d, %v; want 0 (the memtable is not counted)", n, err)
	}
	if live, complete, err := db.LiveBytes("totals", big, 1<<20); err != nil || !complete || live < 200*1000 {
		t.Errorf("live bytes before the flush: %d, %v, %v; want the memtable's writes counted", live, complete, err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	n, err := db.Size("totals", big)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks are uncompressed: the table holds the 200 KB of values, plus
	// keys, index and filter.
	if n < 200*1000 || n > 400*1000 {
		t.Errorf("size of totals/0_1: %d bytes, want 200 to 400 KB", n)
	}
	// The estimate counts whole blocks: a keyspace next to a big one may
	// be charged the one block they share.
	if n, err := db.Size("totals", Task{0, 3}); err != nil || n > blockSlack {
		t.Errorf("size of a task never written: %d, %v; want at most a block", n, err)
	}
	if n, err := db.Size("seen", big); err != nil || n > blockSlack {
		t.Errorf("size of another store of the task: %d, %v; want at most a block", n, err)
	}
	if u, err = db.Usage(); err != nil || u.Disk < 200*1000 {
		t.Errorf("disk bytes after the flush: %d, %v; want at least 200 KB", u.Disk, err)
	}
	live, complete, err := db.LiveBytes("totals", big, 1<<20)
	if want := int64(200 * (prefixLen(StoreTask{"totals", big}) + 5 + 1000)); err != nil || !complete || live != want {
		t.Errorf("live bytes of totals/0_1: %d, complete %v, %v; want %d", live, complete, err, want)
	}
	if live, complete, err := db.LiveBytes("totals", big, 10_000); err != nil || complete || live <= 10_000 || live > 12_000 {
		t.Errorf("live bytes with a 10 KB limit: %d, complete %v, %v; want just past the limit, incomplete", live, complete, err)
	}
	if live, complete, err := db.LiveBytes("totals", Task{0, 3}, 1<<20); err != nil || !complete || live != 0 {
		t.Errorf("live bytes of a task never written: %d, %v, %v", live, complete, err)
	}
	if _, err := db.Size("", big); err == nil {
		t.Error("Size of an unnamed store: no error")
	}
}
