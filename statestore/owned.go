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

// MarkOwned records at as the last time the replica owned each (store,
// task) given: every changelog record written before then by anyone is in
// its local state or still to be restored from its offset. The write is not
// synced: a crash can lose it, which only makes the state look older than
// it is (the safe side).
func (db *DB) MarkOwned(at time.Time, pairs ...StoreTask) error {
	if err := db.check(); err != nil {
		return err
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	v := encodeOwned(at)
	for _, st := range pairs {
		if err := st.validate(); err != nil {
			return err
		}
		if err := b.Set(appendPrefix(nil, kindOwned, st), v, nil); err != nil {
			return fmt.Errorf("statestore: mark %s owned: %w", st, err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("statestore: mark owned: %w", err)
	}
	return nil
}

// Sync makes every write so far durable, MarkOwned's among them. The
// runtime calls it after marking the tasks it just restored: a Wipe is
// durable at once, so a mark lost to a crash after it would leave the
// task's state looking never owned, and the next start would wipe and
// restore it fully again.
func (db *DB) Sync() error {
	if err := db.check(); err != nil {
		return err
	}
	if err := db.pdb.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("statestore: sync: %w", err)
	}
	return nil
}

// LastOwned returns the time MarkOwned last recorded for store's keyspace
// of task; ok is false when none is recorded (state written by a release
// that did not record it, or none at all).
func (db *DB) LastOwned(store string, task Task) (at time.Time, ok bool, err error) {
	if err := db.check(); err != nil {
		return time.Time{}, false, err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return time.Time{}, false, err
	}
	v, ok, err := get(db.pdb, appendPrefix(nil, kindOwned, st), nil)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	at, err = decodeOwned(v)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s: %w", st, err)
	}
	return at, true, nil
}

// Kept lists every (store, task) the DB holds a changelog offset or a
// last-owned time of, with that time (zero when none is recorded).
func (db *DB) Kept() (map[StoreTask]time.Time, error) {
	tasks, err := db.Tasks()
	if err != nil {
		return nil, err
	}
	out := make(map[StoreTask]time.Time, len(tasks))
	for _, st := range tasks {
		out[st] = time.Time{}
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{kindOwned}, UpperBound: []byte{kindOwned + 1}})
	if err != nil {
		return nil, fmt.Errorf("statestore: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		_, st, rest, err := decodePrefix(it.Key())
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%w: last-owned key has %d trailing bytes", ErrCorrupt, len(rest))
		}
		var at time.Time
		if err == nil {
			at, err = decodeOwned(it.Value())
		}
		if err != nil {
			return nil, errors.Join(err, it.Close())
		}
		out[st] = at
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("statestore: %w", err)
	}
	return out, nil
}

func encodeOwned(at time.Time) []byte {
	return binary.BigEndian.AppendUint64([]byte{formatOwnedV1}, uint64(at.UnixNano()))
}

func decodeOwned(b []byte) (time.Time, error) {
	if err := checkFixed(b, formatOwnedV1, "last-owned time"); err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[1:]))), nil
}
