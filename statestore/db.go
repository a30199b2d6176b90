package statestore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
)

// DB is the local state of one replica: one Pebble database holding every
// store of every task the replica has run.
//
// Its methods are safe for concurrent use, except Close, which must not run
// concurrently with any other call on the DB or its Txns; after Close every
// method returns ErrClosed.
type DB struct {
	pdb    *pebble.DB
	dir    string // the database's directory; empty: not on the OS's file system
	log    hclog.Logger
	wo     *pebble.WriteOptions
	dedup  map[string]bool
	cache  *readCache // nil: off
	closed atomic.Bool
	// sizedKeys and sizedChanges are how many data keys and changes the
	// last applied Txn staged: a new Txn starts its map and list that big,
	// so a transaction like the last one does not grow them (rehashing and
	// copying) several times over.
	sizedKeys, sizedChanges atomic.Int64
	// ops holds the scratch space of Apply's batch (*[]batchOp): Txns of
	// one DB may apply concurrently.
	ops sync.Pool
	// writes counts the batches that changed data keys (Apply, Restore,
	// Wipe), counted after each commits: a seeker opened before the last
	// one is reopened before it reads.
	writes atomic.Uint64
	// seekers are the Txns' open iterators, closed by Close if their Txn
	// is still open.
	seekMu  sync.Mutex
	seekers map[*seeker]struct{}
}

// Open opens (creating if needed) the state database in dir. An empty dir
// means an in-memory database, for tests.
func Open(dir string, opts Options) (*DB, error) {
	if dir == "" {
		return openFS(dir, vfs.NewMem(), opts)
	}
	db, err := openFS(dir, vfs.Default, opts)
	if err != nil {
		return nil, err
	}
	db.dir = dir
	return db, nil
}

// openFS is Open on a given file system (tests use it to simulate crashes).
func openFS(dir string, fs vfs.FS, opts Options) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	cacheSize := opts.CacheSize
	if cacheSize == 0 {
		cacheSize = defaultCacheSize
	}
	memTableSize := opts.MemTableSize
	if memTableSize == 0 {
		memTableSize = defaultMemTableSize
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref() // the DB holds its own reference
	popts := &pebble.Options{
		FS:                 walFS{fs},
		Cleaner:            deletingCleaner{},
		Cache:              cache,
		Logger:             pebbleLogger{log.Named("pebble")},
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       uint64(memTableSize),
	}
	// Most dedup lookups are for event ids never seen: bloom filters answer
	// those without reading data blocks from every level.
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// State is small, hot and read point by point: blocks are kept
	// uncompressed, so a read that misses the block cache costs a copy, not
	// a decompression (Kafka Streams' RocksDB stores make the same choice).
	popts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("statestore: open %q: %w", dir, err)
	}
	db := &DB{
		pdb:   pdb,
		log:   log,
		wo:    pebble.Sync,
		dedup: make(map[string]bool, len(opts.DedupStores)),
	}
	switch {
	case opts.ReadCacheEntries == 0:
		db.cache = newReadCache(defaultReadCacheEntries)
	case opts.ReadCacheEntries > 0:
		db.cache = newReadCache(opts.ReadCacheEntries)
	}
	if opts.NoSync {
		db.wo = pebble.NoSync
	}
	for _, s := range opts.DedupStores {
		db.dedup[s] = true
	}
	if err := db.checkFormat(); err != nil {
		return nil, errors.Join(err, pdb.Close())
	}
	log.Debug("state store opened", "dir", dir, "in_memory", dir == "", "sync", !opts.NoSync)
	return db, nil
}

// checkFormat records the layout version in a new database and refuses one
// written in another layout.
func (db *DB) checkFormat() error {
	v, closer, err := db.pdb.Get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		if err := db.pdb.Set(formatKey, []byte{formatVersion}, pebble.Sync); err != nil {
			return fmt.Errorf("statestore: write format version: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("statestore: read format version: %w", err)
	}
	defer closer.Close()
	if len(v) != 1 || v[0] != formatVersion {
		return fmt.Errorf("%w: layout version %x, want %x", ErrIncompatible, v, formatVersion)
	}
	return nil
}

// Close flushes the memtable to a table and closes the database. Txns not
// yet applied are dropped. Calling Close twice returns ErrClosed.
//
// Pebble's own Close leaves the memtable's writes in the write-ahead log,
// to be replayed at the next Open: flushing first leaves the directory
// with the tables and an empty log, the state's size on disk, and the next
// Open replays nothing.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return ErrClosed
	}
	var errs []error
	db.closeSeekers()
	if err := db.pdb.Flush(); err != nil {
		errs = append(errs, fmt.Errorf("statestore: flush before close: %w", err))
	}
	if err := db.pdb.Close(); err != nil {
		errs = append(errs, fmt.Errorf("statestore: close: %w", err))
	}
	return errors.Join(errs...)
}

func (db *DB) check() error {
	if db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Get returns the committed value of key in store's keyspace of task: no
// staged write of any Txn is visible. The value is a copy, safe to keep.
func (db *DB) Get(store string, task Task, key []byte) (value []byte, ok bool, err error) {
	if err := db.check(); err != nil {
		return nil, false, err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return nil, false, err
	}
	cv, err := db.committed(append(appendPrefix(nil, kindData, st), key...))
	if err != nil || !cv.ok {
		return nil, false, err
	}
	return bytes.Clone(cv.v), true, nil
}

// Range calls fn for each committed key of store's keyspace of task in
// [start, end), in key order, until fn returns false. A nil start or end
// leaves that side unbounded. The slices passed to fn are valid only until
// fn returns.
func (db *DB) Range(store string, task Task, start, end []byte, fn func(key, value []byte) bool) error {
	if err := db.check(); err != nil {
		return err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return err
	}
	return scan(db.pdb, appendPrefix(nil, kindData, st), start, end, fn)
}

// Offset returns the changelog offset recorded for store's keyspace of task:
// every changelog record below it is in the local state, so a restore starts
// reading there. ok is false when nothing is recorded (restore from the
// beginning of the changelog).
func (db *DB) Offset(store string, task Task) (offset int64, ok bool, err error) {
	if err := db.check(); err != nil {
		return 0, false, err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return 0, false, err
	}
	v, ok, err := get(db.pdb, appendPrefix(nil, kindOffset, st), nil)
	if err != nil || !ok {
		return 0, false, err
	}
	off, err := decodeOffset(v)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", st, err)
	}
	return off, true, nil
}

// Tasks lists the (store, task) pairs that have a recorded changelog offset,
// ordered by store name length, name, sub-topology, partition.
func (db *DB) Tasks() ([]StoreTask, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: offsetsStart, UpperBound: offsetsEnd})
	if err != nil {
		return nil, fmt.Errorf("statestore: %w", err)
	}
	var out []StoreTask
	for ok := it.First(); ok; ok = it.Next() {
		_, st, rest, err := decodePrefix(it.Key())
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%w: offset key has %d trailing bytes", ErrCorrupt, len(rest))
		}
		if err != nil {
			return nil, errors.Join(err, it.Close())
		}
		out = append(out, st)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("statestore: %w", err)
	}
	return out, nil
}

// Wipe deletes store's keyspace of task, its dedup index, its recorded
// offset, last-owned time and restore start, in one atomic batch. Other
// tasks and stores are untouched. The
// runtime calls it when the changelog no longer holds the recorded offset,
// then restores from the beginning. No open Txn may write to the pair: its
// Apply would put its staged keys back over the wiped keyspace.
func (db *DB) Wipe(store string, task Task) error {
	if err := db.check(); err != nil {
		return err
	}
	st := StoreTask{store, task}
	if err := st.validate(); err != nil {
		return err
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	for _, kind := range []byte{kindData, kindDedupIndex} {
		p := appendPrefix(nil, kind, st)
		if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
			return fmt.Errorf("statestore: wipe %s: %w", st, err)
		}
	}
	for _, kind := range []byte{kindOffset, kindOwned, kindRestoring} {
		if err := b.Delete(appendPrefix(nil, kind, st), nil); err != nil {
			return fmt.Errorf("statestore: wipe %s: %w", st, err)
		}
	}
	if err := b.Commit(db.wo); err != nil {
		return fmt.Errorf("statestore: wipe %s: %w", st, err)
	}
	db.writes.Add(1)
	if db.cache != nil {
		db.cache.clear()
	}
	db.log.Info("wiped store task", "store", store, "task", task.String())
	return nil
}

// committed reads the committed value of a full data key, through the read
// cache when there is one.
func (db *DB) committed(key []byte) (cachedValue, error) {
	return db.committedBy(key, db.get)
}

// get reads the full key with Pebble's point read and returns a copy of
// the value.
func (db *DB) get(key []byte) ([]byte, bool, error) { return getKey(db.pdb, key) }

// committedBy is committed with read reading Pebble.
func (db *DB) committedBy(key []byte, read func([]byte) ([]byte, bool, error)) (cachedValue, error) {
	c := db.cache
	var epoch uint64
	if c != nil {
		cv, hit, e := c.get(key)
		if hit {
			return cv, nil
		}
		epoch = e
	}
	v, ok, err := read(key)
	if err != nil {
		return cachedValue{}, err
	}
	if c != nil && ok {
		// An absence is not cached: the keys read absent are, nearly
		// always, new keys (an event id, a new entity) about to be
		// written, which the apply caches anyway; caching the absence too
		// cost an allocation and an insert per new key, and pushed hot
		// keys out sooner.
		c.fill(key, v, ok, epoch)
	}
	return cachedValue{v: v, ok: ok}, nil
}

// reader is what *pebble.DB and an indexed *pebble.Batch share.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// get reads prefix+key from r and returns a copy of the value.
func get(r reader, prefix, key []byte) ([]byte, bool, error) {
	return getKey(r, append(prefix, key...))
}

// getKey reads the full key from r and returns a copy of the value.
func getKey(r reader, key []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("statestore: get: %w", err)
	}
	v = bytes.Clone(v)
	if v == nil {
		v = []byte{}
	}
	return v, true, closer.Close()
}

// scan iterates r within prefix+[start, end) and calls fn with keys stripped
// of the prefix.
func scan(r reader, prefix, start, end []byte, fn func(key, value []byte) bool) error {
	lower := append(bytes.Clone(prefix), start...)
	var upper []byte
	if end == nil {
		upper = prefixEnd(prefix)
	} else {
		if bytes.Compare(start, end) >= 0 {
			return nil
		}
		upper = append(bytes.Clone(prefix), end...)
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("statestore: range: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			break // the iterator keeps the error; Close returns it
		}
		if !fn(it.Key()[len(prefix):], v) {
			break
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("statestore: range: %w", err)
	}
	return nil
}
