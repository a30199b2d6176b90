package statestore

import (
	"encoding/binary"
	"fmt"
	"math"
)

// MaxStoreNameLen is the longest store name, in bytes. Store names also name
// changelog topics (<application>-<store>-changelog), which Kafka limits to
// 249 characters, so the limit never binds in practice.
const MaxStoreNameLen = 255

// Keyspace kinds: the first byte of every Pebble key. See doc.go.
const (
	kindMeta       byte = 0x00 // database-wide metadata (format version)
	kindData       byte = 0x01 // user keys of a (store, task)
	kindOffset     byte = 0x02 // the changelog offset of a (store, task)
	kindDedupIndex byte = 0x03 // the expiry index of a dedup (store, task)
	kindOwned      byte = 0x04 // when the replica last owned a (store, task)
	kindRestoring  byte = 0x05 // when an unfinished restore of a (store, task) from nothing began
)

// taskLen is the encoded length of a Task: two big-endian uint32s.
const taskLen = 8

// Task identifies one task of a replica: a partition of a sub-topology.
type Task struct {
	SubTopology int
	Partition   int32
}

// String formats t as Kafka Streams does: "<sub-topology>_<partition>".
func (t Task) String() string { return fmt.Sprintf("%d_%d", t.SubTopology, t.Partition) }

func (t Task) validate() error {
	if t.SubTopology < 0 || uint64(t.SubTopology) > math.MaxUint32 || t.Partition < 0 {
		return fmt.Errorf("%w: %s", ErrInvalidTask, t)
	}
	return nil
}

// StoreTask names one keyspace: a store of one task.
type StoreTask struct {
	Store string
	Task  Task
}

// String formats st as "<store>/<sub-topology>_<partition>".
func (st StoreTask) String() string { return st.Store + "/" + st.Task.String() }

func (st StoreTask) validate() error {
	if err := validateStore(st.Store); err != nil {
		return err
	}
	return st.Task.validate()
}

func validateStore(store string) error {
	if store == "" || len(store) > MaxStoreNameLen {
		return fmt.Errorf("%w: %q (want 1 to %d bytes)", ErrInvalidStore, store, MaxStoreNameLen)
	}
	return nil
}

// appendPrefix appends the prefix of st's keyspace of the given kind:
//
//	kind | len(store) (1 byte) | store | sub-topology (uint32 BE) | partition (uint32 BE)
//
// The length byte makes the encoding prefix-free: two different (kind, store,
// task) triples never produce prefixes where one is a prefix of the other, so
// no keyspace can see another's keys. st must be valid.
func appendPrefix(dst []byte, kind byte, st StoreTask) []byte {
	dst = append(dst, kind, byte(len(st.Store)))
	dst = append(dst, st.Store...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(st.Task.SubTopology))
	return binary.BigEndian.AppendUint32(dst, uint32(st.Task.Partition))
}

// prefixLen is the length of appendPrefix's output for st.
func prefixLen(st StoreTask) int { return 2 + len(st.Store) + taskLen }

// decodePrefix splits a key written by appendPrefix (plus any suffix) into its
// kind, (store, task) and the rest. It never panics; malformed keys give an
// error wrapping ErrCorrupt.
func decodePrefix(key []byte) (kind byte, st StoreTask, rest []byte, err error) {
	if len(key) < 2 {
		return 0, StoreTask{}, nil, fmt.Errorf("%w: key of %d bytes has no store prefix", ErrCorrupt, len(key))
	}
	kind = key[0]
	if kind == kindMeta || kind > kindRestoring {
		return 0, StoreTask{}, nil, fmt.Errorf("%w: key kind %#x has no store prefix", ErrCorrupt, kind)
	}
	n := int(key[1])
	if n == 0 || len(key) < 2+n+taskLen {
		return 0, StoreTask{}, nil, fmt.Errorf("%w: truncated store prefix", ErrCorrupt)
	}
	st.Store = string(key[2 : 2+n])
	st.Task.SubTopology = int(binary.BigEndian.Uint32(key[2+n:]))
	p := binary.BigEndian.Uint32(key[2+n+4:])
	if p > math.MaxInt32 {
		return 0, StoreTask{}, nil, fmt.Errorf("%w: partition %d out of range", ErrCorrupt, p)
	}
	st.Task.Partition = int32(p)
	return kind, st, key[2+n+taskLen:], nil
}

// prefixEnd returns the smallest key greater than every key that starts with
// p, or nil if there is none (p is all 0xff). Keyspace prefixes start with a
// kind byte below 0xff, so for them it is never nil.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// formatKey holds the database's layout version.
var formatKey = []byte{kindMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// formatVersion is the layout described in doc.go.
const formatVersion byte = 1

// offsetsStart and offsetsEnd bound the offset keyspace of every (store, task).
var (
	offsetsStart = []byte{kindOffset}
	offsetsEnd   = []byte{kindOffset + 1}
)

// dedupIndexKey appends the index key of an entry first seen at ms:
//
//	prefix(kindDedupIndex, st) | ms with the sign bit flipped (uint64 BE) | event id
//
// Flipping the sign bit makes the unsigned big-endian order match the signed
// order of ms, so an index scan visits entries oldest first.
func appendDedupIndexKey(dst []byte, st StoreTask, ms int64, eventID []byte) []byte {
	dst = appendPrefix(dst, kindDedupIndex, st)
	dst = binary.BigEndian.AppendUint64(dst, uint64(ms)^(1<<63))
	return append(dst, eventID...)
}

// decodeIndexSuffix splits what follows an index key's prefix into the
// first-seen millisecond and the event id.
func decodeIndexSuffix(rest []byte) (ms int64, eventID []byte, err error) {
	if len(rest) < 8 {
		return 0, nil, fmt.Errorf("%w: dedup index key too short", ErrCorrupt)
	}
	return int64(binary.BigEndian.Uint64(rest) ^ (1 << 63)), rest[8:], nil
}
