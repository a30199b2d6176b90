package statestore

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func (t *Txn) checkDedup(store string, task Task) (StoreTask, error) {
	st, err := t.checkStoreTask(store, task)
	if err != nil {
		return st, err
	}
	if !t.db.dedup[store] {
		return st, fmt.Errorf("%w: %q (list it in Options.DedupStores)", ErrNotDedupStore, store)
	}
	return st, nil
}

// GetDedup reads and decodes the entry of eventID in a dedup store, as this
// transaction sees it.
func (t *Txn) GetDedup(store string, task Task, eventID []byte) (DedupEntry, bool, error) {
	if _, err := t.checkDedup(store, task); err != nil {
		return DedupEntry{}, false, err
	}
	v, ok, err := t.Get(store, task, eventID)
	if err != nil || !ok {
		return DedupEntry{}, false, err
	}
	e, err := decodeDedup(v)
	if err != nil {
		return DedupEntry{}, false, fmt.Errorf("%s key %q: %w", StoreTask{store, task}, eventID, err)
	}
	return e, true, nil
}

// PutDedup stages eventID = e in a dedup store (a Put of EncodeDedup(e), so
// it is in Changes) and indexes it by first-seen time for ExpireDedup.
func (t *Txn) PutDedup(store string, task Task, eventID []byte, e DedupEntry) error {
	if _, err := t.checkDedup(store, task); err != nil {
		return err
	}
	return t.Put(store, task, eventID, EncodeDedup(e))
}

// ExpireDedup deletes up to limit entries of a dedup store whose first-seen
// millisecond is before before's (limit <= 0: no limit), oldest first, and
// returns their event ids. Each deletion is a Delete, so Changes carries a
// tombstone for it. Entries staged in this Txn are seen too. The runtime
// calls it with a limit and again in later transactions while it returns
// limit ids, to keep each transaction small.
func (t *Txn) ExpireDedup(store string, task Task, before time.Time, limit int) (expired [][]byte, err error) {
	st, err := t.checkDedup(store, task)
	if err != nil {
		return nil, err
	}
	prefix := appendPrefix(nil, kindDedupIndex, st)
	upper := appendDedupIndexKey(nil, st, before.UnixMilli(), nil)
	it, err := t.indexReader().NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("statestore: expire %s: %w", st, err)
	}
	for ok := it.First(); ok && (limit <= 0 || len(expired) < limit); ok = it.Next() {
		_, id, derr := decodeIndexSuffix(it.Key()[len(prefix):])
		if derr != nil {
			err = fmt.Errorf("%s: %w", st, derr)
			break
		}
		expired = append(expired, bytes.Clone(id))
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("statestore: expire %s: %w", st, cerr)
	}
	if err != nil {
		return nil, err
	}
	for _, id := range expired {
		if err := t.stage(st, id, nil, true, false); err != nil {
			return nil, err
		}
	}
	return expired, nil
}

// LatestDedup returns the latest first-seen time among the entries of a
// dedup store of task, as this transaction sees it, and false when the store
// has none. The runtime uses it to recover a task's stream time after a
// restart or a move: every entry is stamped with the stream time at which it
// was first seen, and the changelog carries the entries.
func (t *Txn) LatestDedup(store string, task Task) (time.Time, bool, error) {
	st, err := t.checkDedup(store, task)
	if err != nil {
		return time.Time{}, false, err
	}
	prefix := appendPrefix(nil, kindDedupIndex, st)
	it, err := t.indexReader().NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("statestore: latest %s: %w", st, err)
	}
	var (
		ms    int64
		found bool
	)
	if it.Last() {
		ms, _, err = decodeIndexSuffix(it.Key()[len(prefix):])
		found = err == nil
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("statestore: latest %s: %w", st, cerr)
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s: %w", st, err)
	}
	if !found {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(ms), true, nil
}
