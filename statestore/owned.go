package statestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Local state of a task is only as good as the changelog records it has
// not missed. While the replica owns a task nobody else writes its
// changelog; once the task moves away, the new owner does, and compaction
// may drop the tombstones it writes once the changelog's
// delete.retention.ms has passed. A restore from an offset recorded before
// that would bring deleted keys back. So the DB records, next to each
// (store, task)'s offset, when the replica last owned it, and the runtime
// wipes state that has not been owned for too long.
//
// A restore that has not finished vouches for nothing newer than the state
// it started from: that state keeps its last-owned time until the restore
// is complete and synced (MarkRestored). A restore that starts from nothing
// has no such time; it is dated by its own start (MarkRestoring) until it
// completes, since the part it has read may miss tombstones that are
// compacted away later.

// MarkOwned records at as the last time the replica owned each (store,
// task) given: every changelog record written before then by anyone is in
// its local state or still to be restored from its offset. The runtime
// calls it after its commits, for tasks whose restore is complete. The
// write is not synced: a crash can lose it, which only makes the state
// look older than it is (the safe side).
func (db *DB) MarkOwned(at time.Time, pairs ...StoreTask) error {
	return db.mark("mark owned", pebble.NoSync, func(b *pebble.Batch, st StoreTask) error {
		return b.Set(appendPrefix(nil, kindOwned, st), encodeOwned(at), nil)
	}, pairs)
}

// MarkRestoring records at as the time a restore of each (store, task)
// given began from nothing: no local state, or state just wiped. Until
// MarkRestored, RestoreBegan returns it and Kept lists it. The write is
// not synced: Pebble's log keeps writes in order, so it is on disk before
// any restored batch that follows it, and a crash that loses it loses
// those batches too, leaving nothing to date.
func (db *DB) MarkRestoring(at time.Time, pairs ...StoreTask) error {
	return db.mark("mark restoring", pebble.NoSync, func(b *pebble.Batch, st StoreTask) error {
		return b.Set(appendPrefix(nil, kindRestoring, st), encodeRestoring(at), nil)
	}, pairs)
}

// MarkRestored ends the restore of each (store, task) given, which has
// applied the changelog up to its end: it records at as the last time the
// replica owned it (see MarkOwned), drops its MarkRestoring time, and
// syncs. The restore's unsynced batches (Restorer) are synced with it, and
// the mark is never on disk without them.
func (db *DB) MarkRestored(at time.Time, pairs ...StoreTask) error {
	return db.mark("mark restored", pebble.Sync, func(b *pebble.Batch, st StoreTask) error {
		if err := b.Set(appendPrefix(nil, kindOwned, st), encodeOwned(at), nil); err != nil {
			return err
		}
		return b.Delete(appendPrefix(nil, kindRestoring, st), nil)
	}, pairs)
}

// mark writes set for every pair in one batch, committed with wo.
func (db *DB) mark(what string, wo *pebble.WriteOptions, set func(*pebble.Batch, StoreTask) error, pairs []StoreTask) error {
	if err := db.check(); err != nil {
		return err
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	for _, st := range pairs {
		if err := st.validate(); err != nil {
			return err
		}
		if err := set(b, st); err != nil {
			return fmt.Errorf("statestore: %s %s: %w", what, st, err)
		}
	}
	if err := b.Commit(wo); err != nil {
		return fmt.Errorf("statestore: %s: %w", what, err)
	}
	return nil
}

// LastOwned returns the time MarkOwned or MarkRestored last recorded for
// store's keyspace of task; ok is false when none is recorded (state
// written by a release that did not record it, a restore from nothing not
// finished yet, or no state at all).
func (db *DB) LastOwned(store string, task Task) (at time.Time, ok bool, err error) {
	return db.markTime(kindOwned, decodeOwned, store, task)
}

// RestoreBegan returns the time MarkRestoring recorded for store's
// keyspace of task, while MarkRestored has not ended that restore.
func (db *DB) RestoreBegan(store string, task Task) (at time.Time, ok bool, err error) {
	return db.markTime(kindRestoring, decodeRestoring, store, task)
}

func (db *DB) markTime(kind byte, decode func([]byte) (time.Time, error), store string, task Task) (time.Time, bool, error) {
	if err := db.check(); err != nil {
		return time.Time{}, false, err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return time.Time{}, false, err
	}
	v, ok, err := get(db.pdb, appendPrefix(nil, kind, st), nil)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	at, err := decode(v)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s: %w", st, err)
	}
	return at, true, nil
}

// Kept lists every (store, task) the DB holds a changelog offset, a
// last-owned time or a restore's start of, with its last-owned time, else
// the start of its restore from nothing (zero when neither is recorded).
func (db *DB) Kept() (map[StoreTask]time.Time, error) {
	tasks, err := db.Tasks()
	if err != nil {
		return nil, err
	}
	out := make(map[StoreTask]time.Time, len(tasks))
	for _, st := range tasks {
		out[st] = time.Time{}
	}
	// Restore starts first, so that last-owned times replace them.
	if err := db.eachMark(kindRestoring, decodeRestoring, func(st StoreTask, at time.Time) { out[st] = at }); err != nil {
		return nil, err
	}
	if err := db.eachMark(kindOwned, decodeOwned, func(st StoreTask, at time.Time) { out[st] = at }); err != nil {
		return nil, err
	}
	return out, nil
}

// eachMark calls fn with every time of the given kind.
func (db *DB) eachMark(kind byte, decode func([]byte) (time.Time, error), fn func(StoreTask, time.Time)) error {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{kind}, UpperBound: []byte{kind + 1}})
	if err != nil {
		return fmt.Errorf("statestore: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		_, st, rest, err := decodePrefix(it.Key())
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%w: key of kind %#x has %d trailing bytes", ErrCorrupt, kind, len(rest))
		}
		var at time.Time
		if err == nil {
			at, err = decode(it.Value())
		}
		if err != nil {
			return errors.Join(err, it.Close())
		}
		fn(st, at)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("statestore: %w", err)
	}
	return nil
}

func encodeOwned(at time.Time) []byte { return encodeTime(formatOwnedV1, at) }

func decodeOwned(b []byte) (time.Time, error) { return decodeTime(b, formatOwnedV1, "last-owned time") }

func encodeRestoring(at time.Time) []byte { return encodeTime(formatRestoringV1, at) }

func decodeRestoring(b []byte) (time.Time, error) {
	return decodeTime(b, formatRestoringV1, "restore start time")
}

func encodeTime(format byte, at time.Time) []byte {
	return binary.BigEndian.AppendUint64([]byte{format}, uint64(at.UnixNano()))
}

func decodeTime(b []byte, format byte, what string) (time.Time, error) {
	if err := checkFixed(b, format, what); err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[1:]))), nil
}
