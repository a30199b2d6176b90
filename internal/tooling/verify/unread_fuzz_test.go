package verify

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// countBatches reads bytes a broker sent: whatever they are, it neither
// panics nor counts more records than the offsets it was asked about, and
// it never moves backwards.
func FuzzCountBatches(f *testing.F) {
	b := kmsg.RecordBatch{FirstOffset: 3, LastOffsetDelta: 4, NumRecords: 5, Magic: 2, ProducerID: -1}
	f.Add(b.AppendTo(nil), int64(0), int64(10))
	b.Attributes = 0x30 // a transactional control batch
	f.Add(b.AppendTo(nil), int64(5), int64(8))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, int64(0), int64(1))
	f.Fuzz(func(t *testing.T, raw []byte, from, to int64) {
		if from < 0 || to < from || to-from > 1<<40 {
			return
		}
		a := aborted{}
		a.add([]kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: -1, FirstOffset: 4}})
		next, n := countBatches(raw, from, to, a)
		if next < from {
			t.Fatalf("next %d before from %d", next, from)
		}
		if n < 0 || n > to-from {
			t.Fatalf("%d records counted in [%d, %d)", n, from, to)
		}
	})
}
