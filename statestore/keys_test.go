package statestore

import (
	"bytes"
	"errors"
	"testing"
)

func TestPrefixesArePrefixFree(t *testing.T) {
	stores := []string{"a", "ab", "b", "a\x00", "\x01", "\xff"}
	tasks := []Task{{0, 0}, {0, 1}, {0, 10}, {1, 0}, {1, 1}, {10, 1}, {256, 0}, {1 << 31, 1<<31 - 1}}
	var all []StoreTask
	for _, s := range stores {
		for _, tk := range tasks {
			all = append(all, StoreTask{s, tk})
		}
	}
	for _, kind := range []byte{kindData, kindOffset, kindDedupIndex} {
		for _, x := range all {
			px := appendPrefix(nil, kind, x)
			if len(px) != prefixLen(x) {
				t.Fatalf("prefixLen(%s) = %d, encoded %d", x, prefixLen(x), len(px))
			}
			for _, y := range all {
				if x == y {
					continue
				}
				if py := appendPrefix(nil, kind, y); bytes.HasPrefix(py, px) {
					t.Errorf("prefix of %s %x is a prefix of %s's %x", x, px, y, py)
				}
			}
		}
	}
}

func TestDecodePrefix(t *testing.T) {
	st := StoreTask{"orders", Task{3, 17}}
	key := append(appendPrefix(nil, kindData, st), "user"...)
	kind, got, rest, err := decodePrefix(key)
	if err != nil || kind != kindData || got != st || string(rest) != "user" {
		t.Fatalf("decodePrefix = %#x, %v, %q, %v", kind, got, rest, err)
	}
	for _, c := range []struct {
		name string
		key  []byte
	}{
		{"empty", nil},
		{"kind only", []byte{kindData}},
		{"meta kind", append([]byte{kindMeta}, key[1:]...)},
		{"unknown kind", append([]byte{kindRestoring + 1}, key[1:]...)},
		{"empty store", []byte{kindData, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"truncated task", key[:2+len(st.Store)+7]},
		{"partition over int32", []byte{kindData, 1, 'a', 0, 0, 0, 0, 0x80, 0, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, _, err := decodePrefix(c.key); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodePrefix(%x) = %v, want ErrCorrupt", c.key, err)
			}
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xff}, []byte{2}},
		{[]byte{1, 0xff, 0xff}, []byte{2}},
		{[]byte{0xff, 0xff}, nil},
	} {
		if got := prefixEnd(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
	}
	// Partition 255 ends in 0xff: the carry gives a bound above every key of
	// the keyspace and not above the first key of the next task.
	p := appendPrefix(nil, kindData, StoreTask{"s", Task{0, 255}})
	next := appendPrefix(nil, kindData, StoreTask{"s", Task{0, 256}})
	end := prefixEnd(p)
	if bytes.Compare(append(bytes.Clone(p), 0xff, 0xff), end) >= 0 || bytes.Compare(end, next) > 0 {
		t.Errorf("prefixEnd(%x) = %x, want above every key of the keyspace and at most %x", p, end, next)
	}
}

func TestDedupIndexOrder(t *testing.T) {
	st := StoreTask{"d", Task{0, 0}}
	times := []int64{-1 << 62, -1000, -1, 0, 1, 999, 1 << 62}
	for i := 1; i < len(times); i++ {
		a := appendDedupIndexKey(nil, st, times[i-1], []byte("zzz"))
		b := appendDedupIndexKey(nil, st, times[i], []byte("a"))
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("index key of %d does not sort before %d", times[i-1], times[i])
		}
		_, _, rest, err := decodePrefix(b)
		if err != nil {
			t.Fatal(err)
		}
		ms, id, err := decodeIndexSuffix(rest)
		if err != nil || ms != times[i] || string(id) != "a" {
			t.Errorf("decodeIndexSuffix = %d, %q, %v; want %d, a", ms, id, err, times[i])
		}
	}
	if _, _, err := decodeIndexSuffix([]byte{1, 2, 3}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short index suffix: %v", err)
	}
}
