package statestore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkDedupLookup looks event ids up in a dedup store of 200,000
// entries compacted into the bottom level of the LSM, as the dedup gate
// does: absent ids (new events, most lookups) and present ones (replays),
// through a Txn of 5,000 lookups, with the read cache off so every lookup
// reaches Pebble. ns/op and cpu-ns/op are per lookup.
func BenchmarkDedupLookup(b *testing.B) {
	const entries, perTxn = 200_000, 5000
	db := openT(b, b.TempDir(), Options{NoSync: true, DedupStores: []string{"ids"}, ReadCacheEntries: -1})
	task := Task{SubTopology: 0, Partition: 0}
	e := DedupEntry{FirstSeen: time.UnixMilli(1_700_000_000_000), Source: "orders/0/1", PayloadHash: [32]byte{1}}
	tx := db.Begin()
	for i := range entries {
		if err := tx.PutDedup("ids", task, fmt.Appendf(nil, "event-%012d", 2*i), e); err != nil {
			b.Fatal(err)
		}
		if (i+1)%perTxn == 0 {
			if err := tx.Apply(map[StoreTask]int64{{"ids", task}: int64(i)}); err != nil {
				b.Fatal(err)
			}
			tx = db.Begin()
		}
	}
	tx.Discard()
	if err := db.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		present bool
	}{{"absent", false}, {"present", true}} {
		b.Run(c.name, func(b *testing.B) {
			var key []byte
			tx := db.Begin()
			b.ReportAllocs()
			i := 0
			cpu0 := processCPU(b)
			for b.Loop() {
				n := 2*(i*7919%entries) + 1 // odd: never written
				if c.present {
					n--
				}
				key = fmt.Appendf(key[:0], "event-%012d", n)
				if _, ok, err := tx.GetDedup("ids", task, key); err != nil || ok != c.present {
					b.Fatalf("GetDedup(%s) = %v, %v", key, ok, err)
				}
				if i++; i%perTxn == 0 {
					tx.Discard()
					tx = db.Begin()
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(i), "cpu-ns/op")
			tx.Discard()
		})
	}
}
