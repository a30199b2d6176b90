package wire

// The partitioner: how outputs and repartitioned records are keyed to
// partitions, by the Kafka seam and the topology test driver alike.

// Partition maps a key to a partition the way Kafka's Java clients do
// (murmur2, positive, modulo the count), so topics written by onceflow stay
// co-partitioned with those written by other clients. A record without a key
// stays on fallback modulo n (the input partition, deterministically).
func Partition(key []byte, fallback int32, n int32) int32 {
	if n <= 0 {
		return 0
	}
	if key == nil {
		return fallback % n
	}
	return int32(murmur2(key)&0x7fffffff) % n
}

// murmur2 is the 32-bit hash of Kafka's default partitioner.
func murmur2(data []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(data))
	for len(data) >= 4 {
		k := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
