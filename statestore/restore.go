package statestore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Restore applies changelog records of store's keyspace of task, read from
// Kafka in offset order, and records next as the task's changelog offset (the
// offset after the last record read), all in one atomic batch. The runtime
// calls it repeatedly while it replays the changelog, starting from Offset
// (or the log start when there is none), until it reaches the end.
//
// Only Key, Value and Tombstone of each record are read; Store and Task may
// be left empty. A record with a nil Kafka value must come as Tombstone.
// In a dedup store (Options.DedupStores) the expiry index is rebuilt from the
// records as they are applied, and a value that does not decode as a
// DedupEntry fails the whole batch with ErrCorrupt, nothing written.
//
// Replaying records the state already includes is harmless: each record is
// a whole value (or a tombstone) for its key, so applying an ordered suffix
// of the changelog again converges to the same state.
func (db *DB) Restore(store string, task Task, records []Change, next int64) error {
	if err := db.check(); err != nil {
		return err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return err
	}
	if next < 0 {
		return fmt.Errorf("%w: %s at %d", ErrInvalidOffset, st, next)
	}
	var b *pebble.Batch
	if db.dedup[store] {
		b = db.pdb.NewIndexedBatch() // reindex reads the previous values
	} else {
		b = db.pdb.NewBatch()
	}
	defer b.Close()
	prefix := appendPrefix(nil, kindData, st)
	key := prefix
	var ikey []byte
	for i, r := range records {
		key = append(key[:len(prefix)], r.Key...)
		var err error
		if ikey, err = db.write(b, st, key, r.Value, r.Tombstone, false, ikey); err != nil {
			return fmt.Errorf("statestore: restore %s record %d: %w", st, i, err)
		}
	}
	if err := b.Set(appendPrefix(nil, kindOffset, st), encodeOffset(next), nil); err != nil {
		return fmt.Errorf("statestore: restore %s: %w", st, err)
	}
	if err := b.Commit(db.wo); err != nil {
		return fmt.Errorf("statestore: restore %s: %w", st, err)
	}
	if db.cache != nil {
		db.cache.forget(func(yield func([]byte) bool) {
			for _, r := range records {
				if !yield(append(key[:len(prefix)], r.Key...)) {
					return
				}
			}
		})
	}
	db.log.Debug("restored changelog records", "store", store, "task", task.String(), "records", len(records), "next_offset", next)
	return nil
}
