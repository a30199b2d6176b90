package topology

// The layout of a window store: one key-value keyspace per task, so its
// changelog and restore are those of every store.
//
//	m                                   the stage's stream time (8 bytes)
//	w <len(key):4> <key> <start> <end>  a window's aggregate
//	r <len(key):4> <key> <ts>           sliding windows: the values of a key's records at ts
//	c <close> <data key>                a window not closed yet, by close time
//	e <expiry> <data key>               a closed window (or a record) kept until its expiry
//
// Times are milliseconds since the Unix epoch, 8 bytes big-endian with the
// sign bit flipped, so that byte order is time order. A window's close
// index entry is deleted, in the transaction that emits its final result,
// when it closes: the emitted fact and the output commit together.

import (
	"encoding/binary"
	"errors"
)

const (
	prefixMeta   = 'm'
	prefixWindow = 'w'
	prefixRaw    = 'r'
	prefixClose  = 'c'
	prefixExpire = 'e'
)

var metaStreamTime = []byte{prefixMeta}

// appendTime appends ms in an order-preserving form.
func appendTime(b []byte, ms int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(ms)^(1<<63))
}

// readTime reads a time appendTime wrote.
func readTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// keyPrefix is the prefix of a key's entries under prefix (w or r).
func keyPrefix(prefix byte, kb []byte) []byte {
	b := make([]byte, 0, 1+4+len(kb)+16)
	b = append(b, prefix)
	b = binary.BigEndian.AppendUint32(b, uint32(len(kb)))
	return append(b, kb...)
}

// windowKey is the data key of a key's window.
func windowKey(kb []byte, start, end int64) []byte {
	return appendTime(appendTime(keyPrefix(prefixWindow, kb), start), end)
}

// rawKey is the data key of a key's records at ts (sliding windows).
func rawKey(kb []byte, ts int64) []byte { return appendTime(keyPrefix(prefixRaw, kb), ts) }

// indexKey is an index entry (c or e) of a data key at time at.
func indexKey(prefix byte, at int64, dataKey []byte) []byte {
	b := make([]byte, 0, 9+len(dataKey))
	return append(appendTime(append(b, prefix), at), dataKey...)
}

// indexBound is the end of a range over an index, excluding entries
// after at.
func indexBound(prefix byte, at int64) []byte {
	return appendTime([]byte{prefix}, at+1)
}

// prefixEnd is the first key after every key starting with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

var errWindowKey = errors.New("topology: window store: malformed key")

// parseWindowKey splits a window data key into the record key and the
// window's start and end.
func parseWindowKey(dk []byte) (kb []byte, start, end int64, err error) {
	if len(dk) < 1+4+16 || dk[0] != prefixWindow {
		return nil, 0, 0, errWindowKey
	}
	n := int(binary.BigEndian.Uint32(dk[1:]))
	if len(dk) != 1+4+n+16 {
		return nil, 0, 0, errWindowKey
	}
	kb = dk[5 : 5+n]
	return kb, readTime(dk[5+n:]), readTime(dk[5+n+8:]), nil
}

// parseRawTime reads the timestamp of a raw data key.
func parseRawTime(dk []byte) (int64, error) {
	if len(dk) < 1+4+8 || dk[0] != prefixRaw {
		return 0, errWindowKey
	}
	return readTime(dk[len(dk)-8:]), nil
}

// appendValue appends one length-prefixed value to a raw entry.
func appendValue(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// splitValues reads the values of a raw entry.
func splitValues(b []byte) ([][]byte, error) {
	var vs [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, errWindowKey
		}
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+n {
			return nil, errWindowKey
		}
		vs = append(vs, b[4:4+n])
		b = b[4+n:]
	}
	return vs, nil
}
