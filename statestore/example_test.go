package statestore_test

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/statestore"
)

// One Kafka transaction's worth of state: stage, hand the changes to the
// changelog producer, apply with the offsets once Kafka has committed.
func Example() {
	db, err := statestore.Open("", statestore.Options{}) // "": in memory
	if err != nil {
		panic(err)
	}
	defer db.Close()

	task := statestore.Task{SubTopology: 0, Partition: 3}
	tx := db.Begin()
	_ = tx.Put("totals", task, []byte("alice"), []byte("42"))
	_ = tx.Put("totals", task, []byte("bob"), []byte("7"))
	_ = tx.Delete("totals", task, []byte("carol"))

	v, _, _ := tx.Get("totals", task, []byte("alice")) // sees its own write
	fmt.Printf("staged alice: %s\n", v)

	for _, c := range tx.Changes() { // produced to app-totals-changelog, partition 3
		fmt.Printf("changelog: %s %s tombstone=%v\n", c.Store, c.Key, c.Tombstone)
	}
	// ... the Kafka transaction commits; the last changelog record was at offset 102.
	if err := tx.Apply(map[statestore.StoreTask]int64{{Store: "totals", Task: task}: 103}); err != nil {
		panic(err)
	}

	off, _, _ := db.Offset("totals", task)
	_, ok, _ := db.Get("totals", task, []byte("bob"))
	fmt.Println("restore would resume at", off, "; bob committed:", ok)
	// Output:
	// staged alice: 42
	// changelog: totals alice tombstone=false
	// changelog: totals bob tombstone=false
	// changelog: totals carol tombstone=true
	// restore would resume at 103 ; bob committed: true
}

// A dedup store remembers event ids by event time and expires them with
// tombstones that go to the changelog.
func ExampleTxn_ExpireDedup() {
	db, err := statestore.Open("", statestore.Options{DedupStores: []string{"seen"}})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	task := statestore.Task{Partition: 0}
	day := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

	tx := db.Begin()
	for i, id := range []string{"evt-1", "evt-2", "evt-3"} {
		_ = tx.PutDedup("seen", task, []byte(id), statestore.DedupEntry{
			FirstSeen:   day.Add(time.Duration(i) * 24 * time.Hour),
			Source:      fmt.Sprintf("payments/0/%d", 100+i),
			PayloadHash: sha256.Sum256([]byte(id)),
		})
	}
	_ = tx.Apply(map[statestore.StoreTask]int64{{Store: "seen", Task: task}: 3})

	tx = db.Begin()
	expired, _ := tx.ExpireDedup("seen", task, day.Add(36*time.Hour), 100)
	fmt.Printf("expired %s with %d tombstones\n", expired, tx.Len())
	e, ok, _ := tx.GetDedup("seen", task, []byte("evt-3"))
	fmt.Println("evt-3 kept:", ok, e.Source, e.FirstSeen.Format(time.DateOnly))
	tx.Discard()
	// Output:
	// expired [evt-1 evt-2] with 2 tombstones
	// evt-3 kept: true payments/0/102 2026-05-03
}

func ExampleDB_Restore() {
	db, err := statestore.Open("", statestore.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	task := statestore.Task{Partition: 1}

	from, ok, _ := db.Offset("totals", task)
	fmt.Println("recorded offset:", from, ok) // none: replay from the log start
	// Records read (read_committed) from app-totals-changelog, partition 1.
	batch := []statestore.Change{
		{Key: []byte("alice"), Value: []byte("1")},
		{Key: []byte("alice"), Value: []byte("5")},
		{Key: []byte("bob"), Value: []byte("2")},
		{Key: []byte("bob"), Tombstone: true},
	}
	if err := db.Restore("totals", task, batch, 5); err != nil {
		panic(err)
	}
	v, _, _ := db.Get("totals", task, []byte("alice"))
	_, bob, _ := db.Get("totals", task, []byte("bob"))
	next, _, _ := db.Offset("totals", task)
	fmt.Printf("alice: %s bob present: %v next offset: %d\n", v, bob, next)
	// Output:
	// recorded offset: 0 false
	// alice: 5 bob present: false next offset: 5
}
