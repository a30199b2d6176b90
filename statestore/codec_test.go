package statestore

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestDedupRoundTrip(t *testing.T) {
	var hash [32]byte
	for i := range hash {
		hash[i] = byte(i)
	}
	for _, c := range []struct {
		name string
		in   DedupEntry
		want time.Time // FirstSeen after the round trip
	}{
		{"zero", DedupEntry{}, time.UnixMilli(time.Time{}.UnixMilli()).UTC()},
		{"typical", DedupEntry{time.Date(2026, 3, 1, 12, 0, 0, 123e6, time.UTC), "orders/3/42", hash}, time.Date(2026, 3, 1, 12, 0, 0, 123e6, time.UTC)},
		{"truncated to ms", DedupEntry{FirstSeen: time.Unix(10, 999_999_999)}, time.UnixMilli(10_999).UTC()},
		{"before 1970 floors", DedupEntry{FirstSeen: time.Unix(-1, 500_000)}, time.UnixMilli(-1000).UTC()},
		{"other zone comes back UTC", DedupEntry{FirstSeen: time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("x", 3600))}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"long source", DedupEntry{Source: strings.Repeat("s", 300)}, time.UnixMilli(time.Time{}.UnixMilli()).UTC()},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := EncodeDedup(c.in)
			if b[0] != formatDedupV1 {
				t.Fatalf("format byte %#x", b[0])
			}
			got, err := decodeDedup(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.FirstSeen != c.want || got.Source != c.in.Source || got.PayloadHash != c.in.PayloadHash {
				t.Fatalf("decodeDedup(EncodeDedup(%+v)) = %+v, want FirstSeen %v", c.in, got, c.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	valid := EncodeDedup(DedupEntry{Source: "ab"})
	for _, c := range []struct {
		name string
		dec  func([]byte) error
		in   []byte
	}{
		{"dedup nil", decDedup, nil},
		{"dedup wrong format", decDedup, append([]byte{0x12}, valid[1:]...)},
		{"dedup truncated time", decDedup, valid[:5]},
		{"dedup no length", decDedup, valid[:9]},
		{"dedup truncated hash", decDedup, valid[:len(valid)-1]},
		{"dedup trailing byte", decDedup, append(bytes.Clone(valid), 0)},
		{"dedup length too long", decDedup, withByte(valid, 9, 3)},
		{"dedup length overflows", decDedup, append(append(bytes.Clone(valid[:9]), bytes.Repeat([]byte{0xff}, 10)...), 1)},
		{"dedup non-minimal length", decDedup, append(append(bytes.Clone(valid[:9]), 0x82, 0x00), valid[10:]...)},
		{"offset negative", decOffset, encodeOffset(-1)},
		{"dedup an offset", decDedup, encodeOffset(1)},
		{"offset wrong format", decOffset, append([]byte{formatDedupV1}, encodeOffset(1)[1:]...)},
		{"offset empty", decOffset, nil},
		{"offset long", decOffset, append(encodeOffset(1), 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.dec(c.in); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode(%x) = %v, want ErrCorrupt", c.in, err)
			}
		})
	}
}

func decDedup(b []byte) error  { _, err := decodeDedup(b); return err }
func decOffset(b []byte) error { _, err := decodeOffset(b); return err }

func withByte(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

func TestOffsetCodec(t *testing.T) {
	for _, v := range []int64{0, 1, math.MaxInt64} {
		got, err := decodeOffset(encodeOffset(v))
		if err != nil || got != v {
			t.Errorf("offset %d: got %d, %v", v, got, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  Options
		nErrs int
	}{
		{"zero", Options{}, 0},
		{"full", Options{CacheSize: 1 << 20, MemTableSize: 1 << 20, NoSync: true, DedupStores: []string{"a", "b"}}, 0},
		{"negative cache", Options{CacheSize: -1}, 1},
		{"memtable too big", Options{MemTableSize: 4 << 30}, 1},
		{"every problem at once", Options{CacheSize: -1, MemTableSize: -1, DedupStores: []string{"", "a", "a", strings.Repeat("x", 256)}}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.opts.Validate()
			var n int
			if err != nil {
				if !errors.Is(err, ErrInvalidOptions) {
					t.Errorf("%v does not wrap ErrInvalidOptions", err)
				}
				n = len(strings.Split(err.Error(), "\n"))
			}
			if n != c.nErrs {
				t.Fatalf("Validate() = %v: %d problems, want %d", err, n, c.nErrs)
			}
			if _, err := Open("", c.opts); (err != nil) != (c.nErrs > 0) {
				t.Errorf("Open accepted invalid options or refused valid ones: %v", err)
			}
		})
	}
}
