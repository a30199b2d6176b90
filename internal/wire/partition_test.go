package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The values Kafka's own UtilsTest expects of murmur2, as signed ints.
func TestMurmur2MatchesKafka(t *testing.T) {
	for in, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := int32(murmur2([]byte(in))); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestPartition(t *testing.T) {
	if got := Partition(nil, 7, 4); got != 3 {
		t.Errorf("no key: partition %d, want the fallback 7 mod 4 = 3", got)
	}
	h := int32(-973932308)
	if got, want := Partition([]byte("21"), 0, 10), int32(uint32(h)&0x7fffffff)%10; got != want {
		t.Errorf("Partition(21) = %d, want %d", got, want)
	}
	if got := Partition([]byte("k"), 0, 0); got != 0 {
		t.Errorf("no partitions: %d, want 0", got)
	}
}

// FuzzPartitionMatchesKafka: for every non-null key and partition count,
// Partition picks the partition franz-go's Kafka-compatible partitioner
// (murmur2, as Java's default partitioner) picks, so a record keyed like
// its input lands where a Java client would put it.
func FuzzPartitionMatchesKafka(f *testing.F) {
	f.Add([]byte("key-7"), uint16(3))
	f.Add([]byte{}, uint16(1))
	f.Add([]byte{0xff, 0xfe, 0x80}, uint16(1000))
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	f.Fuzz(func(t *testing.T, key []byte, n uint16) {
		parts := int32(n%4096) + 1
		got := Partition(key, 0, parts)
		if got < 0 || got >= parts {
			t.Fatalf("Partition(%x, 0, %d) = %d, out of range", key, parts, got)
		}
		if want := int32(p.Partition(&kgo.Record{Key: key}, int(parts))); got != want {
			t.Fatalf("Partition(%x, 0, %d) = %d, franz-go picks %d", key, parts, got, want)
		}
	})
}
