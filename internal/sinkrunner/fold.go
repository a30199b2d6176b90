package sinkrunner

import "encoding/json"

// A ledger partition can have two writers for a while: a runner the group
// evicted (a zombie) that still records an outcome or an in-flight mark,
// and the new owner, which wrote its fence record when it took the
// partition. The zombie's record lands after the owner's and would undo
// it in every restore. Each entry carries the fence generation of its
// writer (Entry.Fence), so a reader of the changelog in offset order
// skips an entry whose fence is below the latest fence record before it:
// its writer had lost the partition when it wrote. An expiry tombstone
// carries no fence; only a succeeded entry expires, and a succeeded entry
// is never written again, so a tombstone is applied only over a
// succeeded entry (or none): a zombie's delete of an entry the owner has
// since written otherwise is skipped as stale too.

// Fold applies the fence rule to one ledger partition's changelog, read
// in offset order. Restores use it, and so do readers of the ledger
// outside the runner (sinks status, unknown list).
type Fold struct {
	// Fence is the generation of the latest fence record read so far
	// (zero: none).
	Fence int64
	// Stale counts the records skipped as a zombie's.
	Stale int
}

// fenceValue is the value of a fence record in the changelog. It is not
// a tombstone, so compaction keeps the partition's latest fence record
// (a tombstone would go after delete.retention.ms, and a restore from the
// start would then apply a zombie's entries after it).
var fenceValue = []byte("{}")

// IsFence reports whether a ledger changelog key is the fence record's.
func IsFence(key []byte) bool { return string(key) == fenceKey }

// Admit reports whether the changelog record at offset off, with key and
// value (nil: a tombstone), is applied to the ledger. cur returns the
// key's entry as the records admitted before left it (ok false: none). A
// fence record is never applied: it raises Fence.
func (f *Fold) Admit(off int64, key, value []byte, cur func() (e Entry, ok bool, err error)) bool {
	if IsFence(key) {
		f.Fence = max(f.Fence, off+1)
		return false
	}
	if value == nil {
		e, ok, err := cur()
		if !ok || (err == nil && e.State == Succeeded) {
			return true
		}
		f.Stale++
		return false
	}
	var fenced struct {
		Fence int64 `json:"fence"`
	}
	if json.Unmarshal(value, &fenced) != nil || fenced.Fence == 0 || fenced.Fence >= f.Fence {
		return true // undecodable values are applied as before: the runner parks them
	}
	f.Stale++
	return false
}

// storedFence is the Pebble value, under fenceKey, of the latest fence
// record before the ledger's recorded changelog position: a restore from
// that position starts its Fold there.
func storedFence(g int64) []byte { return EncodeEntry(Entry{Fence: g}) }
