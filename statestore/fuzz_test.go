package statestore

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// The fuzz targets below read bytes that come from outside: values and keys
// read back from Pebble and changelog records restored from Kafka. Seeds are
// in testdata/fuzz/<target>/ as well as added here.

func FuzzDecodeDedup(f *testing.F) {
	var h [32]byte
	copy(h[:], "0123456789abcdef0123456789abcdef")
	f.Add(EncodeDedup(DedupEntry{}))
	f.Add(EncodeDedup(DedupEntry{FirstSeen: time.UnixMilli(1_700_000_000_123), Source: "orders/3/42", PayloadHash: h}))
	f.Add([]byte{formatDedupV1})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeDedup(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if e.FirstSeen.Location() != time.UTC {
			t.Fatalf("FirstSeen in %v, want UTC", e.FirstSeen.Location())
		}
		// The encoding is canonical: whatever decodes re-encodes to itself.
		if re := EncodeDedup(e); !bytes.Equal(re, b) {
			t.Fatalf("EncodeDedup(decodeDedup(%x)) = %x", b, re)
		}
	})
}

// FuzzDecodePrefix: a key either fails to decode or decodes to a valid
// (store, task) whose prefix plus the rest is the key again.
func FuzzDecodePrefix(f *testing.F) {
	f.Add(append(appendPrefix(nil, kindData, StoreTask{"orders", Task{1, 2}}), "key"...))
	f.Add(appendPrefix(nil, kindOffset, StoreTask{"a", Task{0, 10}}))
	f.Add(appendDedupIndexKey(nil, StoreTask{"dedup", Task{0, 0}}, 1000, []byte("id")))
	f.Fuzz(func(t *testing.T, key []byte) {
		kind, st, rest, err := decodePrefix(key)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if err := st.validate(); err != nil {
			t.Fatalf("decoded an invalid %s: %v", st, err)
		}
		if re := append(appendPrefix(nil, kind, st), rest...); !bytes.Equal(re, key) {
			t.Fatalf("re-encoded %x, want %x", re, key)
		}
		if kind == kindDedupIndex {
			if _, _, err := decodeIndexSuffix(rest); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("index suffix error %v does not wrap ErrCorrupt", err)
			}
		}
	})
}

// FuzzPrefixFree: two different keyspaces never have prefixes where one is a
// prefix of the other, so neither's range can see the other's keys.
func FuzzPrefixFree(f *testing.F) {
	f.Add("a", uint32(0), int32(1), "ab", uint32(0), int32(1))
	f.Add("a", uint32(0), int32(1), "a", uint32(0), int32(10))
	f.Add("s", uint32(1), int32(0), "s", uint32(0), int32(256))
	f.Fuzz(func(t *testing.T, s1 string, sub1 uint32, p1 int32, s2 string, sub2 uint32, p2 int32) {
		x := StoreTask{s1, Task{int(sub1), p1}}
		y := StoreTask{s2, Task{int(sub2), p2}}
		if x.validate() != nil || y.validate() != nil || x == y {
			return
		}
		px, py := appendPrefix(nil, kindData, x), appendPrefix(nil, kindData, y)
		if bytes.HasPrefix(px, py) || bytes.HasPrefix(py, px) {
			t.Fatalf("prefixes of %s (%x) and %s (%x) overlap", x, px, y, py)
		}
		if _, got, _, err := decodePrefix(px); err != nil || got != x {
			t.Fatalf("decodePrefix(%x) = %s, %v; want %s", px, got, err, x)
		}
	})
}

// FuzzDecodeOffset: a recorded changelog offset either fails to decode
// (ErrCorrupt) or is a non-negative offset that re-encodes to the bytes.
func FuzzDecodeOffset(f *testing.F) {
	f.Add(encodeOffset(0))
	f.Add(encodeOffset(1 << 40))
	f.Add(append([]byte{formatOffsetV1}, 0xff, 0, 0, 0, 0, 0, 0, 0))
	f.Add(append([]byte{formatDedupV1}, encodeOffset(7)[1:]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		off, err := decodeOffset(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if off < 0 {
			t.Fatalf("decoded a negative offset %d", off)
		}
		if re := encodeOffset(off); !bytes.Equal(re, b) {
			t.Fatalf("encodeOffset(decodeOffset(%x)) = %x", b, re)
		}
	})
}

// FuzzDecodeOwned: a last-owned time either fails to decode (ErrCorrupt)
// or re-encodes to the bytes.
func FuzzDecodeOwned(f *testing.F) {
	f.Add(encodeOwned(time.Unix(1_700_000_000, 123)))
	f.Add(encodeOwned(time.Unix(0, 0)))
	f.Add([]byte{formatOwnedV1, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		at, err := decodeOwned(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if re := encodeOwned(at); !bytes.Equal(re, b) {
			t.Fatalf("encodeOwned(decodeOwned(%x)) = %x", b, re)
		}
	})
}

// FuzzDecodeIndexSuffix: the suffix of a dedup index key either fails to
// decode (ErrCorrupt) or splits into a time and an event id that
// re-encode to it, and index keys order by time, oldest first.
func FuzzDecodeIndexSuffix(f *testing.F) {
	st := StoreTask{"dedup", Task{0, 3}}
	prefix := len(appendPrefix(nil, kindDedupIndex, st))
	f.Add(appendDedupIndexKey(nil, st, 1_700_000_000_000, []byte("e-1"))[prefix:], int64(-5))
	f.Add(appendDedupIndexKey(nil, st, -1, nil)[prefix:], int64(0))
	f.Add([]byte{1, 2, 3}, int64(1))
	f.Fuzz(func(t *testing.T, rest []byte, other int64) {
		ms, id, err := decodeIndexSuffix(rest)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		key := appendDedupIndexKey(nil, st, ms, id)
		if !bytes.Equal(key[prefix:], rest) {
			t.Fatalf("re-encoded suffix %x, want %x", key[prefix:], rest)
		}
		if cmp := bytes.Compare(appendDedupIndexKey(nil, st, other, nil), appendDedupIndexKey(nil, st, ms, nil)); (cmp < 0) != (other < ms) {
			t.Fatalf("index keys of %d and %d order %d", other, ms, cmp)
		}
	})
}
