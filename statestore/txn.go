package statestore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/cockroachdb/pebble/v2"
)

// Change is one staged write: what the runtime produces to the changelog
// topic <application>-<store>-changelog, partition Task.Partition, in the same
// Kafka transaction. Restore takes the same type back.
//
// For a Put, Value is never nil (an empty value is []byte{}), so a Kafka
// record with a nil value maps to Tombstone and nothing else does.
type Change struct {
	Store     string
	Task      Task
	Key       []byte
	Value     []byte // nil for a tombstone
	Tombstone bool
}

// Txn stages the state writes of one Kafka transaction, across any number of
// tasks and stores: reads through the Txn see its own writes over the
// committed state. Nothing reaches the database until Apply, which the
// runtime calls after the Kafka transaction has committed; on abort it calls
// Discard.
//
// A write is kept once: its key and value in the list of changes (what the
// changelog receives) and as its key's last value in a map (what Get reads).
// No Pebble batch holds the data writes while the transaction is open;
// Apply builds its batch from the map. Only what is read through an
// iterator goes into an indexed batch as it is staged: a dedup store's
// expiry index entries (for ExpireDedup and LatestDedup), and the writes of
// a store once Range has been called on it. An indexed batch's skiplist
// insert cost more than the rest of a write's staging, for writes nothing
// ever iterated.
//
// A Txn is not safe for concurrent use: one goroutine drives it. Several Txns
// may be open at once on one DB (for example one per task, each applied with
// its own task's offsets); their keyspaces must not overlap.
type Txn struct {
	db      *DB
	changes []Change
	staged  map[string]cachedValue // the last write of each data key, by full Pebble key
	// index holds the staged dedup index entries, nil until the first.
	index *pebble.Batch
	// ranged holds the staged writes of the stores in rangedStores: those
	// Range was called on. Nil until the first Range.
	ranged       *pebble.Batch
	rangedStores map[string]bool
	seeker       *seeker // dedup lookups; nil until the first
	closed       bool    // the DB was closed at Begin
	done         bool
	key          []byte // scratch for data keys
	ikey         []byte // scratch for index keys
}

// Begin starts a transaction. If the DB is closed, every method of the Txn
// returns ErrClosed.
func (db *DB) Begin() *Txn {
	t := &Txn{db: db, closed: db.check() != nil}
	if n := db.sizedKeys.Load(); n > 0 {
		t.staged = make(map[string]cachedValue, n)
	}
	if n := db.sizedChanges.Load(); n > 0 {
		t.changes = make([]Change, 0, n)
	}
	return t
}

func (t *Txn) check() error {
	if t.done {
		return ErrTxnDone
	}
	if err := t.db.check(); err != nil {
		return err
	}
	if t.closed {
		return ErrClosed
	}
	return nil
}

func (t *Txn) checkStoreTask(store string, task Task) (StoreTask, error) {
	if err := t.check(); err != nil {
		return StoreTask{}, err
	}
	st := StoreTask{store, task}
	return st, st.validate()
}

// Get returns the value of key in store's keyspace of task as this
// transaction sees it: its own staged writes over the committed state. The
// value is a copy, safe to keep.
func (t *Txn) Get(store string, task Task, key []byte) (value []byte, ok bool, err error) {
	st, err := t.checkStoreTask(store, task)
	if err != nil {
		return nil, false, err
	}
	t.key = append(appendPrefix(t.key[:0], kindData, st), key...)
	// Every data key staged is in staged, so what is not there is read
	// from the committed state.
	cv, ok := t.staged[string(t.key)]
	if !ok {
		read := t.db.get
		if t.db.dedup[store] {
			read = t.seek
		}
		if cv, err = t.db.committedBy(t.key, read); err != nil {
			return nil, false, err
		}
	}
	if !cv.ok {
		return nil, false, nil
	}
	return bytes.Clone(cv.v), true, nil
}

// Put stages key = value in store's keyspace of task and records the Change.
// key and value are copied; the caller may reuse them. In a dedup store the
// value must be an encoded DedupEntry.
func (t *Txn) Put(store string, task Task, key, value []byte) error {
	st, err := t.checkStoreTask(store, task)
	if err != nil {
		return err
	}
	return t.stage(st, key, value, false, false)
}

// Delete stages the deletion of key in store's keyspace of task and records a
// tombstone Change (also when the key does not exist: the changelog may hold
// it even where the local state does not yet).
func (t *Txn) Delete(store string, task Task, key []byte) error {
	st, err := t.checkStoreTask(store, task)
	if err != nil {
		return err
	}
	return t.stage(st, key, nil, true, false)
}

// stage writes one key; absent says the caller knows the key has no value
// in this transaction's view (a dedup store then skips reading it back).
// key and value are copied.
func (t *Txn) stage(st StoreTask, key, value []byte, tombstone, absent bool) error {
	buf := make([]byte, len(key)+len(value))
	k := buf[:len(key):len(key)]
	copy(k, key)
	var v []byte
	if !tombstone {
		v = buf[len(key):]
		copy(v, value)
	}
	return t.stageOwned(st, k, v, tombstone, absent)
}

// stageOwned is stage for a key and value the Txn may keep: nobody
// modifies them afterwards (a Scope's own copies, handed over at Commit).
func (t *Txn) stageOwned(st StoreTask, key, value []byte, tombstone, absent bool) error {
	t.key = append(appendPrefix(t.key[:0], kindData, st), key...)
	if t.db.dedup[st.Store] {
		if err := t.reindex(st, value, tombstone, absent); err != nil {
			return err
		}
	}
	if t.ranged != nil && t.rangedStores[st.Store] {
		if err := setOrDelete(t.ranged, t.key, value, tombstone); err != nil {
			return fmt.Errorf("statestore: write %s: %w", st, err)
		}
	}
	c := Change{Store: st.Store, Task: st.Task, Key: key, Tombstone: tombstone}
	if !tombstone {
		c.Value = value
	}
	t.changes = append(t.changes, c)
	if t.staged == nil {
		t.staged = map[string]cachedValue{}
	}
	t.staged[string(t.key)] = cachedValue{v: c.Value, ok: !tombstone}
	return nil
}

// reindex stages the move of the index entry of the dedup key in t.key from
// its previous first-seen time, in this transaction's view, to the new one
// (or its removal, for a tombstone). absent says the key has no previous
// value in that view.
func (t *Txn) reindex(st StoreTask, value []byte, tombstone, absent bool) error {
	eventID := t.key[prefixLen(st):]
	var newMs int64
	if !tombstone {
		e, err := decodeDedup(value)
		if err != nil {
			return fmt.Errorf("%s key %q: %w", st, eventID, err)
		}
		newMs = e.FirstSeen.UnixMilli()
	}
	var prev cachedValue
	if !absent {
		var staged bool
		if prev, staged = t.staged[string(t.key)]; !staged {
			var err error
			if prev, err = t.db.committed(t.key); err != nil {
				return fmt.Errorf("statestore: read %s: %w", st, err)
			}
		}
	}
	if t.index == nil {
		t.index = t.db.pdb.NewIndexedBatch()
	}
	if prev.ok {
		old, err := decodeDedup(prev.v)
		if err != nil {
			return fmt.Errorf("%s stored key %q: %w", st, eventID, err)
		}
		if oldMs := old.FirstSeen.UnixMilli(); tombstone || oldMs != newMs {
			t.ikey = appendDedupIndexKey(t.ikey[:0], st, oldMs, eventID)
			if err := t.index.Delete(t.ikey, nil); err != nil {
				return fmt.Errorf("statestore: write %s: %w", st, err)
			}
		}
	}
	if !tombstone {
		t.ikey = appendDedupIndexKey(t.ikey[:0], st, newMs, eventID)
		if err := t.index.Set(t.ikey, nil, nil); err != nil {
			return fmt.Errorf("statestore: write %s: %w", st, err)
		}
	}
	return nil
}

// indexReader is what reads of the dedup index go through: the staged
// entries over the committed ones.
func (t *Txn) indexReader() reader {
	if t.index != nil {
		return t.index
	}
	return t.db.pdb
}

func setOrDelete(b *pebble.Batch, key, value []byte, tombstone bool) error {
	if tombstone {
		return b.Delete(key, nil)
	}
	return b.Set(key, value, nil)
}

// Range calls fn for each key of store's keyspace of task in [start, end),
// in key order, as this transaction sees it, until fn returns false. A nil
// start or end leaves that side unbounded. Keys are passed without the
// keyspace prefix; the slices passed to fn are valid only until fn returns.
// fn may write through the Txn; the iteration does not see those writes.
func (t *Txn) Range(store string, task Task, start, end []byte, fn func(key, value []byte) bool) error {
	st, err := t.checkStoreTask(store, task)
	if err != nil {
		return err
	}
	if !t.rangedStores[store] {
		if err := t.rangeStore(store); err != nil {
			return err
		}
	}
	return scan(t.ranged, appendPrefix(nil, kindData, st), start, end, fn)
}

// rangeStore copies the writes staged so far in store into the ranged
// batch, which takes the store's later writes as they are staged.
func (t *Txn) rangeStore(store string) error {
	if t.ranged == nil {
		t.ranged = t.db.pdb.NewIndexedBatch()
		t.rangedStores = map[string]bool{}
	}
	var key []byte
	for _, c := range t.changes {
		if c.Store != store {
			continue
		}
		key = append(appendPrefix(key[:0], kindData, StoreTask{c.Store, c.Task}), c.Key...)
		if err := setOrDelete(t.ranged, key, c.Value, c.Tombstone); err != nil {
			return fmt.Errorf("statestore: range %s: %w", store, err)
		}
	}
	t.rangedStores[store] = true
	return nil
}

// Changes lists every Put and Delete staged so far, in order. Changes are
// only ever appended, so a later call returns an extension of an earlier one
// and the runtime may produce the new tail (Changes()[sent:]) as it goes.
// The slice and the bytes it refers to are never modified by the Txn and
// stay valid after Apply; the caller must not modify them. After Apply or
// Discard it is nil.
func (t *Txn) Changes() []Change {
	if t.done {
		return nil
	}
	return t.changes
}

// Len is the number of staged changes (0 after Apply or Discard).
func (t *Txn) Len() int { return len(t.Changes()) }

// Empty reports whether nothing is staged: the runtime may skip producing
// changelog records, though Apply may still record offsets.
func (t *Txn) Empty() bool { return t.Len() == 0 }

// Apply writes the staged changes and the given changelog offsets in one
// atomic Pebble batch (fsynced unless Options.NoSync), then finishes the Txn.
// The runtime calls it after the Kafka transaction carrying the changes has
// committed; offsets[st] is the offset after the last changelog record of st
// in that transaction (restore resumes there).
//
// Every (store, task) with a change must have an offset, so local state never
// runs ahead of its recorded offset; offsets for other pairs are recorded too.
// Invalid input (ErrMissingOffset, ErrInvalidOffset, ErrInvalidStore,
// ErrInvalidTask) leaves the Txn open and nothing written. Any other failure
// finishes the Txn with nothing written or the database broken; the offsets
// did not move, so reopening and restoring from the changelog recovers.
func (t *Txn) Apply(offsets map[StoreTask]int64) error {
	if err := t.check(); err != nil {
		return err
	}
	for st, off := range offsets {
		if err := st.validate(); err != nil {
			return err
		}
		if off < 0 {
			return fmt.Errorf("%w: %s at %d", ErrInvalidOffset, st, off)
		}
	}
	var prev StoreTask
	for i, c := range t.changes {
		st := StoreTask{c.Store, c.Task}
		if i > 0 && st == prev {
			continue
		}
		prev = st
		if _, ok := offsets[st]; !ok {
			return fmt.Errorf("%w: %s", ErrMissingOffset, st)
		}
	}
	defer t.finish()
	ops, _ := t.db.ops.Get().(*[]batchOp)
	if ops == nil {
		ops = new([]batchOp)
	}
	commit, err := t.batch(offsets, ops)
	t.db.ops.Put(ops)
	if err != nil {
		return fmt.Errorf("statestore: apply: %w", err)
	}
	defer commit.Close()
	if err := commit.Commit(t.db.wo); err != nil {
		return fmt.Errorf("statestore: apply: %w", err)
	}
	t.db.writes.Add(1)
	if c := t.db.cache; c != nil {
		c.update(maps.All(t.staged))
	}
	t.db.sizedKeys.Store(int64(min(len(t.staged), maxSized)))
	t.db.sizedChanges.Store(int64(min(len(t.changes), maxSized)))
	return nil
}

// maxSized bounds the size a Txn's map of staged keys and its list of
// changes start at.
const maxSized = 1 << 18

// Discard drops every staged change and finishes the Txn. It is a no-op on a
// finished Txn.
func (t *Txn) Discard() {
	if !t.done {
		t.finish()
	}
}

func (t *Txn) finish() {
	t.done = true
	t.changes = nil
	t.staged = nil
	for _, b := range []**pebble.Batch{&t.index, &t.ranged} {
		if *b != nil {
			_ = (*b).Close() // only reports a batch already closed
			*b = nil
		}
	}
	t.rangedStores = nil
	if t.seeker != nil {
		t.db.closeSeeker(t.seeker)
		t.seeker = nil
	}
}

// write stages one change of st in b, keeping a dedup store's expiry index
// in step (reading the previous value through b, which must then be an
// indexed batch). dataKey is the full Pebble key. ikey is scratch space,
// returned for reuse.
func (db *DB) write(b *pebble.Batch, st StoreTask, dataKey, value []byte, tombstone, absent bool, ikey []byte) ([]byte, error) {
	if db.dedup[st.Store] {
		var err error
		if ikey, err = db.reindex(b, st, dataKey, value, tombstone, absent, ikey); err != nil {
			return ikey, err
		}
	}
	var err error
	if tombstone {
		err = b.Delete(dataKey, nil)
	} else {
		err = b.Set(dataKey, value, nil)
	}
	if err != nil {
		return ikey, fmt.Errorf("statestore: write %s: %w", st, err)
	}
	return ikey, nil
}

// reindex moves the index entry of a dedup key from its previous first-seen
// time to the new one (or removes it for a tombstone).
func (db *DB) reindex(b *pebble.Batch, st StoreTask, dataKey, value []byte, tombstone, absent bool, ikey []byte) ([]byte, error) {
	eventID := dataKey[prefixLen(st):]
	var newMs int64
	if !tombstone {
		e, err := decodeDedup(value)
		if err != nil {
			return ikey, fmt.Errorf("%s key %q: %w", st, eventID, err)
		}
		newMs = e.FirstSeen.UnixMilli()
	}
	old, closer, err := []byte(nil), io.Closer(nil), pebble.ErrNotFound
	if !absent {
		old, closer, err = b.Get(dataKey)
	}
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return ikey, fmt.Errorf("statestore: read %s: %w", st, err)
	default:
		oldE, derr := decodeDedup(old)
		_ = closer.Close()
		if derr != nil {
			return ikey, fmt.Errorf("%s stored key %q: %w", st, eventID, derr)
		}
		oldMs := oldE.FirstSeen.UnixMilli()
		if tombstone || oldMs != newMs {
			ikey = appendDedupIndexKey(ikey[:0], st, oldMs, eventID)
			if err := b.Delete(ikey, nil); err != nil {
				return ikey, fmt.Errorf("statestore: write %s: %w", st, err)
			}
		}
	}
	if !tombstone {
		ikey = appendDedupIndexKey(ikey[:0], st, newMs, eventID)
		if err := b.Set(ikey, nil, nil); err != nil {
			return ikey, fmt.Errorf("statestore: write %s: %w", st, err)
		}
	}
	return ikey, nil
}
