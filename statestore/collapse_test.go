package statestore

import (
	"bytes"
	"fmt"
	"testing"
)

// TestApplyWritesEachKeyOnce stages 1,000 writes of one key and checks that
// Apply writes one: the write-ahead log grows by far less than the staged
// writes, and the key holds the last value.
func TestApplyWritesEachKeyOnce(t *testing.T) {
	db := openT(t, "", Options{})
	task := Task{SubTopology: 0, Partition: 0}
	value := bytes.Repeat([]byte{'v'}, 100)
	before := db.pdb.Metrics().WAL.BytesIn
	tx := db.Begin()
	for i := range 1000 {
		if err := tx.Put("totals", task, []byte("customer-1"), fmt.Appendf(value[:0:0], "%s-%04d", value, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Apply(map[StoreTask]int64{{"totals", task}: 1000}); err != nil {
		t.Fatal(err)
	}
	if grew := db.pdb.Metrics().WAL.BytesIn - before; grew > 1000 {
		t.Errorf("the log grew by %d bytes for one key of 115 bytes and an offset, want < 1000 (each staged write written)", grew)
	}
	got, ok, err := db.Get("totals", task, []byte("customer-1"))
	if err != nil || !ok || !bytes.HasSuffix(got, []byte("-0999")) {
		t.Fatalf("Get = %q, %v, %v; want the last value", got, ok, err)
	}
}

// TestApplyKeepsTheLastWriteOfEachKey mixes puts and deletes of keys in
// several stores, out of key order, and checks that the database holds the
// last of each after Apply, as staging them one by one would.
func TestApplyKeepsTheLastWriteOfEachKey(t *testing.T) {
	db := openT(t, "", Options{DedupStores: []string{"ids"}})
	a, b := Task{SubTopology: 0, Partition: 1}, Task{SubTopology: 0, Partition: 0}
	type op struct {
		store string
		task  Task
		key   string
		value string // "": delete
	}
	ops := []op{
		{"s", a, "k2", "1"}, {"s", a, "k1", "1"}, {"s", a, "k2", ""}, {"t", b, "k1", "x"},
		{"s", a, "k3", ""}, {"s", a, "k3", "3"}, {"s", b, "k1", "b"}, {"s", a, "k1", "2"},
		{"t", b, "k1", ""}, {"s", a, "k4", "4"},
	}
	want := map[StoreTask]map[string]string{}
	tx := db.Begin()
	for _, o := range ops {
		st := StoreTask{o.store, o.task}
		if want[st] == nil {
			want[st] = map[string]string{}
		}
		var err error
		if o.value == "" {
			err = tx.Delete(o.store, o.task, []byte(o.key))
			delete(want[st], o.key)
		} else {
			err = tx.Put(o.store, o.task, []byte(o.key), []byte(o.value))
			want[st][o.key] = o.value
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	offsets := map[StoreTask]int64{}
	for st := range want {
		offsets[st] = 7
	}
	if err := tx.Apply(offsets); err != nil {
		t.Fatal(err)
	}
	for st, kv := range want {
		got := map[string]string{}
		if err := db.Range(st.Store, st.Task, nil, nil, func(k, v []byte) bool {
			got[string(k)] = string(v)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(kv) {
			t.Errorf("%s holds %v, want %v", st, got, kv)
		}
		if off, ok, err := db.Offset(st.Store, st.Task); err != nil || !ok || off != 7 {
			t.Errorf("%s offset = %d, %v, %v; want 7", st, off, ok, err)
		}
	}
}
