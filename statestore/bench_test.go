package statestore

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTxnPutApply stages 10,000 writes (16-byte keys, 100-byte values)
// in one Txn and applies them; ns/record is the per-write cost of both,
// split into stage-ns/record (Begin and Put) and apply-ns/record (Apply).
func BenchmarkTxnPutApply(b *testing.B) {
	const records = 10_000
	value := make([]byte, 100)
	keys := make([][]byte, records)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%011d", i)
	}
	for _, c := range []struct {
		name string
		dir  func(*testing.B) string
		opts Options
	}{
		{"memory", func(*testing.B) string { return "" }, Options{}},
		{"disk/sync", func(b *testing.B) string { return b.TempDir() }, Options{}},
		{"disk/nosync", func(b *testing.B) string { return b.TempDir() }, Options{NoSync: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			db := openT(b, c.dir(b), c.opts)
			task := Task{SubTopology: 0, Partition: 0}
			b.SetBytes(records * int64(len(keys[0])+len(value)))
			b.ReportAllocs()
			off := int64(0)
			var staging time.Duration
			cpu0 := processCPU(b)
			for b.Loop() {
				start := time.Now()
				tx := db.Begin()
				for _, k := range keys {
					if err := tx.Put("bench", task, k, value); err != nil {
						b.Fatal(err)
					}
				}
				staging += time.Since(start)
				off += records
				if err := tx.Apply(map[StoreTask]int64{{"bench", task}: off}); err != nil {
					b.Fatal(err)
				}
			}
			perRecord := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*records) }
			b.ReportMetric(perRecord(b.Elapsed()), "ns/record")
			b.ReportMetric(perRecord(staging), "stage-ns/record")
			b.ReportMetric(perRecord(b.Elapsed()-staging), "apply-ns/record")
			b.ReportMetric(perRecord(time.Duration(processCPU(b)-cpu0)), "cpu-ns/record")
		})
	}
}

// BenchmarkEventPattern runs the state accesses of one orders event per
// iteration, through a Scope as the runtime does: a dedup lookup and entry
// for a new event id, then a read and a write of three keyed stores (a new
// order's version and amount, one of 200 customers' totals), with an Apply
// every 5,000 events spread over six tasks, as a transaction of the orders
// benchmark is. ns/op is the state's share of an event's CPU; cpu-ns/op is
// the process's CPU per event (steadier on a shared machine).
func BenchmarkEventPattern(b *testing.B) {
	db := openT(b, b.TempDir(), Options{NoSync: true, DedupStores: []string{"event-ids"}})
	const perTxn = 5000
	b.ReportAllocs()
	var (
		tx    *Txn
		scope Scope
		off   int64
		key   []byte
		val   = make([]byte, 8)
	)
	offsets := map[StoreTask]int64{}
	now := time.UnixMilli(1_700_000_000_000)
	i := 0
	cpu0 := processCPU(b)
	for b.Loop() {
		if tx == nil {
			tx = db.Begin()
		}
		task := Task{SubTopology: 0, Partition: int32(i % 6)}
		scope.Reset(tx, task)
		key = fmt.Appendf(key[:0], "event-%012d", i)
		if _, ok, err := scope.GetDedup("event-ids", key); err != nil || ok {
			b.Fatal(ok, err)
		}
		if err := scope.PutDedup("event-ids", key, DedupEntry{FirstSeen: now, Source: "orders/0/1", PayloadHash: [32]byte{1}}); err != nil {
			b.Fatal(err)
		}
		for _, k := range []struct {
			store string
			key   []byte
		}{
			{"order-versions", fmt.Appendf(nil, "order-%010d", i)},
			{"order-amounts", fmt.Appendf(nil, "order-%010d", i)},
			{"customer-totals", fmt.Appendf(nil, "customer-%04d", i%200)},
		} {
			if _, _, err := scope.Get(k.store, k.key); err != nil {
				b.Fatal(err)
			}
			if err := scope.Put(k.store, k.key, val); err != nil {
				b.Fatal(err)
			}
		}
		if err := scope.Commit(); err != nil {
			b.Fatal(err)
		}
		i++
		if i%perTxn == 0 {
			off++
			for _, s := range []string{"event-ids", "order-versions", "order-amounts", "customer-totals"} {
				for p := range int32(6) {
					offsets[StoreTask{s, Task{SubTopology: 0, Partition: p}}] = off
				}
			}
			if err := tx.Apply(offsets); err != nil {
				b.Fatal(err)
			}
			tx = nil
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(i), "cpu-ns/op")
	if tx != nil {
		tx.Discard()
	}
}

// BenchmarkRestoreDedup restores a dedup store from its changelog into an
// empty keyspace, as a cold restore does: batches of 500 records, one new
// event id each. ns/op is per record.
func BenchmarkRestoreDedup(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprintf("NoSync=%v", noSync), func(b *testing.B) { benchmarkRestoreDedup(b, noSync) })
	}
}

func benchmarkRestoreDedup(b *testing.B, noSync bool) {
	db := openT(b, b.TempDir(), Options{NoSync: noSync, DedupStores: []string{"event-ids"}})
	task := Task{SubTopology: 0, Partition: 0}
	now := time.UnixMilli(1_700_000_000_000)
	v := EncodeDedup(DedupEntry{FirstSeen: now, Source: "orders/0/1", PayloadHash: [32]byte{1}})
	const batch = 500
	recs := make([]Change, 0, batch)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		recs = append(recs, Change{Key: fmt.Appendf(nil, "event-%012d", i), Value: v})
		i++
		if len(recs) == batch {
			if err := db.Restore("event-ids", task, recs, int64(i)); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "records/s")
}
