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
		})
	}
}
