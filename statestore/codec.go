package statestore

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Value formats of what the DB writes itself. Every encoded value starts
// with one format byte: the high nibble names the type, the low nibble its
// version, so a value of one type never decodes as another and a later
// version can be told apart.
const (
	formatDedupV1     byte = 0x11 // DedupEntry, the values of dedup stores
	formatOffsetV1    byte = 0x41 // changelog offsets, internal
	formatOwnedV1     byte = 0x51 // last-owned times, internal
	formatRestoringV1 byte = 0x61 // restore start times, internal
)

// DedupEntry is the value of a dedup store: what the engine remembers about
// an event id it has let through.
type DedupEntry struct {
	// FirstSeen is the event time of the first record with this id, kept at
	// millisecond precision (EncodeDedup truncates). Expiry compares it.
	FirstSeen time.Time
	// Source names that record, "<topic>/<partition>/<offset>".
	Source string
	// PayloadHash is the SHA-256 of its payload: the same id with another
	// hash is a conflict, not a replay.
	PayloadHash [32]byte
}

// EncodeDedup encodes e as
//
//	0x11 | first-seen Unix ms (int64 BE) | uvarint len(Source) | Source | PayloadHash (32 bytes)
func EncodeDedup(e DedupEntry) []byte {
	b := make([]byte, 0, 1+8+binary.MaxVarintLen64+len(e.Source)+32)
	b = append(b, formatDedupV1)
	b = binary.BigEndian.AppendUint64(b, uint64(e.FirstSeen.UnixMilli()))
	b = binary.AppendUvarint(b, uint64(len(e.Source)))
	b = append(b, e.Source...)
	return append(b, e.PayloadHash[:]...)
}

// decodeDedup decodes what EncodeDedup wrote. FirstSeen comes back in UTC.
// Any other input, including trailing bytes and non-minimal lengths, gives an
// error wrapping ErrCorrupt.
func decodeDedup(b []byte) (DedupEntry, error) {
	if err := checkFormat(b, formatDedupV1, "dedup entry"); err != nil {
		return DedupEntry{}, err
	}
	b = b[1:]
	if len(b) < 8 {
		return DedupEntry{}, fmt.Errorf("%w: dedup entry truncated", ErrCorrupt)
	}
	ms := int64(binary.BigEndian.Uint64(b))
	b = b[8:]
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return DedupEntry{}, fmt.Errorf("%w: dedup entry source length unreadable", ErrCorrupt)
	}
	if w != uvarintLen(n) {
		return DedupEntry{}, fmt.Errorf("%w: dedup entry source length not minimally encoded", ErrCorrupt)
	}
	b = b[w:]
	if uint64(len(b)) < 32 || n != uint64(len(b)-32) {
		return DedupEntry{}, fmt.Errorf("%w: dedup entry source length %d does not match %d remaining bytes", ErrCorrupt, n, len(b))
	}
	e := DedupEntry{FirstSeen: time.UnixMilli(ms).UTC(), Source: string(b[:n])}
	copy(e.PayloadHash[:], b[n:])
	return e, nil
}

func encodeOffset(off int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{formatOffsetV1}, uint64(off))
}

func decodeOffset(b []byte) (int64, error) {
	if err := checkFixed(b, formatOffsetV1, "changelog offset"); err != nil {
		return 0, err
	}
	off := int64(binary.BigEndian.Uint64(b[1:]))
	if off < 0 {
		return 0, fmt.Errorf("%w: negative changelog offset %d", ErrCorrupt, off)
	}
	return off, nil
}

func checkFormat(b []byte, format byte, what string) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty %s", ErrCorrupt, what)
	}
	if b[0] != format {
		return fmt.Errorf("%w: %s format byte %#x, want %#x", ErrCorrupt, what, b[0], format)
	}
	return nil
}

// checkFixed checks a format byte followed by exactly 8 bytes.
func checkFixed(b []byte, format byte, what string) error {
	if err := checkFormat(b, format, what); err != nil {
		return err
	}
	if len(b) != 9 {
		return fmt.Errorf("%w: %s of %d bytes, want 9", ErrCorrupt, what, len(b))
	}
	return nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
