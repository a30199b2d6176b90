package statestore

import (
	"bytes"
	"maps"
	"slices"
)

// Scope stages the writes of one input record inside a Txn, for one task.
// Reads through the scope see its own writes over the transaction's view.
// Mark and Rollback undo the writes made after a mark (a runtime rolls back
// what one rejected record in flight wrote, and keeps its siblings'),
// Commit moves the scope's writes into the Txn, and Drop discards them (a
// record whose processing failed leaves no state change).
//
// The zero Scope is unusable until Reset. A Scope is reused record after
// record: Reset binds it to a Txn and a task and empties it. Like a Txn, it
// is driven by one goroutine.
type Scope struct {
	t    *Txn
	task Task
	ops  []scopeOp
	// missed is the dedup key GetDedup last found absent in the Txn, so a
	// PutDedup of it can skip reading it back.
	missed struct {
		store string
		key   []byte
	}
}

type scopeOp struct {
	store     string
	key       []byte
	value     []byte // nil for a deletion
	dedup     bool   // value is an encoded DedupEntry
	fresh     bool   // a dedup entry for an id the Txn has none of
	tombstone bool
}

// Reset binds s to t and task and drops whatever it staged.
func (s *Scope) Reset(t *Txn, task Task) {
	s.t, s.task = t, task
	s.Drop()
}

// Mark returns a mark to Rollback to: the writes staged so far.
func (s *Scope) Mark() int { return len(s.ops) }

// Rollback undoes every write staged after mark.
func (s *Scope) Rollback(mark int) {
	if mark < 0 || mark > len(s.ops) {
		return
	}
	clear(s.ops[mark:])
	s.ops = s.ops[:mark]
}

// Drop undoes every write staged in the scope.
func (s *Scope) Drop() {
	s.Rollback(0)
	s.missed.store, s.missed.key = "", s.missed.key[:0]
}

// lookup returns the scope's last write of key in store.
func (s *Scope) lookup(store string, key []byte) (*scopeOp, bool) {
	for i := len(s.ops) - 1; i >= 0; i-- {
		o := &s.ops[i]
		if o.store == store && bytes.Equal(o.key, key) {
			return o, true
		}
	}
	return nil, false
}

// Get returns the value of key as the scope sees it: its own writes over
// the transaction's view. The value is a copy.
func (s *Scope) Get(store string, key []byte) ([]byte, bool, error) {
	if o, ok := s.lookup(store, key); ok {
		if o.tombstone {
			return nil, false, nil
		}
		return bytes.Clone(o.value), true, nil
	}
	return s.t.Get(store, s.task, key)
}

// Put stages key = value. key and value are copied.
func (s *Scope) Put(store string, key, value []byte) error {
	if _, err := s.t.checkStoreTask(store, s.task); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	s.ops = append(s.ops, scopeOp{store: store, key: bytes.Clone(key), value: bytes.Clone(value)})
	return nil
}

// Delete stages the deletion of key.
func (s *Scope) Delete(store string, key []byte) error {
	if _, err := s.t.checkStoreTask(store, s.task); err != nil {
		return err
	}
	s.ops = append(s.ops, scopeOp{store: store, key: bytes.Clone(key), tombstone: true})
	return nil
}

// GetDedup reads and decodes the entry of eventID in a dedup store, as the
// scope sees it.
func (s *Scope) GetDedup(store string, eventID []byte) (DedupEntry, bool, error) {
	if o, ok := s.lookup(store, eventID); ok {
		if o.tombstone {
			return DedupEntry{}, false, nil
		}
		e, err := decodeDedup(o.value)
		return e, err == nil, err
	}
	e, ok, err := s.t.GetDedup(store, s.task, eventID)
	if err == nil && !ok {
		s.missed.store, s.missed.key = store, append(s.missed.key[:0], eventID...)
	}
	return e, ok, err
}

// PutDedup stages eventID = e in a dedup store.
func (s *Scope) PutDedup(store string, eventID []byte, e DedupEntry) error {
	if _, err := s.t.checkDedup(store, s.task); err != nil {
		return err
	}
	_, staged := s.lookup(store, eventID)
	fresh := !staged && s.missed.store == store && bytes.Equal(s.missed.key, eventID)
	s.ops = append(s.ops, scopeOp{store: store, key: bytes.Clone(eventID), value: EncodeDedup(e), dedup: true, fresh: fresh})
	return nil
}

// Range calls fn for each key of store in [start, end), in key order, as
// the scope sees it, until fn returns false (see Txn.Range).
func (s *Scope) Range(store string, start, end []byte, fn func(key, value []byte) bool) error {
	pending := map[string]*scopeOp{}
	for i := range s.ops {
		o := &s.ops[i]
		if o.store == store && (start == nil || bytes.Compare(o.key, start) >= 0) && (end == nil || bytes.Compare(o.key, end) < 0) {
			pending[string(o.key)] = o
		}
	}
	if len(pending) == 0 {
		return s.t.Range(store, s.task, start, end, fn)
	}
	merged := map[string][]byte{}
	if err := s.t.Range(store, s.task, start, end, func(k, v []byte) bool {
		merged[string(k)] = bytes.Clone(v)
		return true
	}); err != nil {
		return err
	}
	for k, o := range pending {
		if o.tombstone {
			delete(merged, k)
		} else {
			merged[k] = o.value
		}
	}
	for _, k := range slices.Sorted(maps.Keys(merged)) {
		if !fn([]byte(k), merged[k]) {
			break
		}
	}
	return nil
}

// Commit moves the scope's writes into the Txn, in order, and empties the
// scope. The Txn keeps the scope's copies of keys and values (they are
// never modified; Rollback and Drop only forget them). On an error the Txn
// may hold some of them: the runtime then discards the whole transaction.
func (s *Scope) Commit() error {
	for i := range s.ops {
		o := &s.ops[i]
		var (
			st  StoreTask
			err error
		)
		if o.dedup {
			st, err = s.t.checkDedup(o.store, s.task)
		} else {
			st, err = s.t.checkStoreTask(o.store, s.task)
		}
		if err == nil {
			err = s.t.stageOwned(st, o.key, o.value, o.tombstone, o.dedup && o.fresh)
		}
		if err != nil {
			return err
		}
	}
	s.Drop()
	return nil
}
