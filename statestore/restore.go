package statestore

import (
	"fmt"
	"hash/maphash"

	"github.com/cockroachdb/pebble/v2"
)

// Restore applies changelog records of store's keyspace of task, read from
// Kafka in offset order, and records next as the task's changelog offset (the
// offset after the last record read), all in one atomic batch, synced
// (unless Options.NoSync). The runtime calls it repeatedly while it replays
// the changelog, starting from Offset (or the log start when there is
// none), until it reaches the end. A Restorer does the same for a whole
// replay with one sync at the end.
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
	r := &Restorer{db: db, st: StoreTask{store, task}, wo: db.wo}
	if err := r.st.validate(); err != nil {
		return err
	}
	return r.Apply(records, next)
}

// maxSeenKeys bounds the keys a Restorer of a dedup store remembers (a
// 64-bit hash each, about 12 MB); past it, every key is looked up.
const maxSeenKeys = 1 << 20

// Restorer replays one (store, task)'s changelog into the DB, batch by
// batch, as Restore does, but without syncing each batch: a crash may lose
// a suffix of the batches applied, each one whole with the changelog offset
// it reaches, so the state on disk is always the changelog up to the
// offset it records and a restore after the crash resumes from there.
// DB.MarkRestored, which syncs, makes the replay durable once it is done.
//
// Rebuilding a dedup store's expiry index needs each key's previous value.
// When the keyspace was empty as the Restorer began (a cold restore), a key
// can only have one if an earlier record of this replay wrote it: the
// Restorer remembers the keys it wrote (up to maxSeenKeys of them) and
// skips the read of the others.
//
// A Restorer belongs to one goroutine; Restorers of different (store,
// task) pairs may run concurrently.
type Restorer struct {
	db *DB
	st StoreTask
	wo *pebble.WriteOptions

	// seen holds the hashes of the keys this replay wrote, while complete:
	// the keyspace was empty at the start and seen has not overflowed.
	seen     map[uint64]struct{}
	complete bool
	seed     maphash.Seed
}

// NewRestorer prepares the replay of store's keyspace of task.
func (db *DB) NewRestorer(store string, task Task) (*Restorer, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	r := &Restorer{db: db, st: StoreTask{store, task}, wo: pebble.NoSync}
	if err := r.st.validate(); err != nil {
		return nil, err
	}
	if db.dedup[store] {
		empty, err := db.emptyKeyspace(r.st)
		if err != nil {
			return nil, err
		}
		if empty {
			r.seen, r.complete, r.seed = map[uint64]struct{}{}, true, maphash.MakeSeed()
		}
	}
	return r, nil
}

// emptyKeyspace reports whether st holds no data.
func (db *DB) emptyKeyspace(st StoreTask) (bool, error) {
	prefix := appendPrefix(nil, kindData, st)
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return false, fmt.Errorf("statestore: restore %s: %w", st, err)
	}
	empty := !it.First()
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("statestore: restore %s: %w", st, err)
	}
	return empty, nil
}

// Apply applies records (the changelog's next ones) and records next as
// the changelog offset, in one atomic batch; see Restore. After an error
// nothing of records is written, and the Restorer no longer skips reads.
func (r *Restorer) Apply(records []Change, next int64) (err error) {
	db, st := r.db, r.st
	defer func() {
		if err != nil {
			r.seen, r.complete = nil, false
		}
	}()
	if err := db.check(); err != nil {
		return err
	}
	if next < 0 {
		return fmt.Errorf("%w: %s at %d", ErrInvalidOffset, st, next)
	}
	var b *pebble.Batch
	if db.dedup[st.Store] {
		b = db.pdb.NewIndexedBatch() // reindex reads the previous values
	} else {
		b = db.pdb.NewBatch()
	}
	defer b.Close()
	prefix := appendPrefix(nil, kindData, st)
	key := prefix
	var ikey []byte
	for i, c := range records {
		key = append(key[:len(prefix)], c.Key...)
		if ikey, err = db.write(b, st, key, c.Value, c.Tombstone, r.absent(c.Key), ikey); err != nil {
			return fmt.Errorf("statestore: restore %s record %d: %w", st, i, err)
		}
	}
	if err := b.Set(appendPrefix(nil, kindOffset, st), encodeOffset(next), nil); err != nil {
		return fmt.Errorf("statestore: restore %s: %w", st, err)
	}
	if err := b.Commit(r.wo); err != nil {
		return fmt.Errorf("statestore: restore %s: %w", st, err)
	}
	db.writes.Add(1)
	if db.cache != nil {
		db.cache.forget(func(yield func([]byte) bool) {
			for _, c := range records {
				if !yield(append(key[:len(prefix)], c.Key...)) {
					return
				}
			}
		})
	}
	db.log.Debug("restored changelog records", "store", st.Store, "task", st.Task.String(), "records", len(records), "next_offset", next)
	return nil
}

// absent reports whether key certainly has no value yet (see Restorer),
// and remembers it as written.
func (r *Restorer) absent(key []byte) bool {
	if !r.complete {
		return false
	}
	h := maphash.Bytes(r.seed, key)
	if _, ok := r.seen[h]; ok {
		return false
	}
	if len(r.seen) >= maxSeenKeys {
		r.seen, r.complete = nil, false
		return false
	}
	r.seen[h] = struct{}{}
	return true
}
