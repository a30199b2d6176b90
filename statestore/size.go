package statestore

import "fmt"

// Size estimates the bytes store's keyspace of task takes in the database's
// files on disk: its user keys and, for a dedup store, its expiry index.
// It reads the files' metadata, not the keys, so it is cheap enough to call
// periodically. It counts whole blocks of the tables (4 KB each by default),
// so a small keyspace may be charged a block it shares with its neighbour.
// Writes still in the memtable (up to Options.MemTableSize of
// the whole database, see Usage) are not counted until Pebble flushes them
// to a file, and deleted keys count until a compaction drops them.
func (db *DB) Size(store string, task Task) (uint64, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return 0, err
	}
	var total uint64
	for _, kind := range []byte{kindData, kindDedupIndex} {
		p := appendPrefix(nil, kind, st)
		n, err := db.pdb.EstimateDiskUsage(p, prefixEnd(p))
		if err != nil {
			return 0, fmt.Errorf("statestore: size of %s: %w", st, err)
		}
		total += n
	}
	return total, nil
}

// LiveBytes counts the bytes of the keys and values of store's keyspace of
// task (and of its expiry index, for a dedup store) as a read sees them:
// exact, writes still in the memtable included, deleted keys not. It reads
// every key, so it stops once it has counted more than limit bytes and
// reports complete false.
func (db *DB) LiveBytes(store string, task Task, limit int64) (n int64, complete bool, err error) {
	if err := db.check(); err != nil {
		return 0, false, err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return 0, false, err
	}
	complete = true
	for _, kind := range []byte{kindData, kindDedupIndex} {
		p := appendPrefix(nil, kind, st)
		err := scan(db.pdb, p, nil, nil, func(k, v []byte) bool {
			n += int64(len(p) + len(k) + len(v))
			if n > limit {
				complete = false
			}
			return complete
		})
		if err != nil {
			return n, false, fmt.Errorf("statestore: live bytes of %s: %w", st, err)
		}
		if !complete {
			break
		}
	}
	return n, complete, nil
}

// Usage is the footprint of the whole database.
type Usage struct {
	// Disk is what the database's directory occupies on disk: the blocks
	// allocated to its files (tables, write-ahead log, manifest, options)
	// and to the directory itself, as du reports it. For an in-memory
	// database, the length of the same files held in memory.
	Disk uint64
	// MemTable is the bytes allocated by memtables, which hold the writes
	// not flushed to a table yet (Size does not see them).
	MemTable uint64
}

// Usage reports the database's footprint.
func (db *DB) Usage() (Usage, error) {
	if err := db.check(); err != nil {
		return Usage{}, err
	}
	m := db.pdb.Metrics()
	u := Usage{Disk: m.DiskSpaceUsage(), MemTable: m.MemTable.Size}
	if db.dir != "" {
		n, err := diskBytes(db.dir)
		if err != nil {
			return Usage{}, err
		}
		u.Disk = n
	}
	return u, nil
}

// Flush writes the memtable to a table on disk.
func (db *DB) Flush() error {
	if err := db.check(); err != nil {
		return err
	}
	if err := db.pdb.Flush(); err != nil {
		return fmt.Errorf("statestore: flush: %w", err)
	}
	return nil
}
