// Package taskstate is what a graph's records run on: the state its nodes
// see while one input record is processed (State: a record scope of the
// state store's transaction, the topology's store declarations, each
// task's stream time, and the dedup gate's decisions), and the record
// executor (Executor: decode, run, roll back, reject). The engine and the
// topology test driver both run graphs on it, so a topology behaves the
// same under test as in a replica.
package taskstate

import (
	"fmt"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/statestore"
)

// Store is a store of the topology with the sub-topology that owns it.
type Store struct {
	graph.Store
	Sub int
}

// Config configures a State.
type Config struct {
	// Stores are the topology's stores, by name.
	Stores map[string]Store
	// MaxClockSkew is how far ahead of Now a record's timestamp may move
	// a task's stream time. Required.
	MaxClockSkew time.Duration
	// Now is the wall clock. Required.
	Now func() time.Time
	// CheckChange may refuse a state change before it is staged (the
	// engine refuses one whose changelog record no topic accepts). Nil:
	// every change is accepted.
	CheckChange func(store string, key, value []byte) error
	// Skewed is told of a record stamped beyond Now + MaxClockSkew. Nil:
	// nobody is.
	Skewed func(task statestore.Task, timestamp time.Time)
	// Source returns the lineage of the record being processed, kept in
	// dedup entries. Nil: none is kept.
	Source func() string
}

// State implements graph.State over one record scope at a time. One
// goroutine drives it.
type State struct {
	cfg         Config
	dedupStores []string // sorted
	txn         *statestore.Txn
	scope       statestore.Scope
	task        statestore.Task
	streamTime  map[statestore.Task]time.Time
	// dedupTime is each task's dedup stream time: the latest first-seen
	// time among its dedup entries, as the state holds them. Only an entry
	// written (and kept) moves it, so it is what a restart recovers.
	dedupTime map[statestore.Task]time.Time
	admitted  []admitted // entries the record scope wrote, not committed yet
	// refused is told of a change CheckChange refused (the Executor
	// rejects the record for it); nil: nobody is.
	refused func(error)
}

// admitted is a dedup entry the record scope wrote at scope mark mark.
type admitted struct {
	mark int
	at   time.Time
}

// New returns a State with no transaction.
func New(cfg Config) *State {
	s := &State{cfg: cfg, streamTime: map[statestore.Task]time.Time{}, dedupTime: map[statestore.Task]time.Time{}}
	for name, st := range cfg.Stores {
		if st.Kind == graph.StoreDedup {
			s.dedupStores = append(s.dedupStores, name)
		}
	}
	slices.Sort(s.dedupStores)
	return s
}

// Begin starts staging into txn (nil: no transaction is open).
func (s *State) Begin(txn *statestore.Txn) {
	s.txn = txn
	s.scope.Reset(txn, s.task)
	s.admitted = s.admitted[:0]
}

// Forget drops every task's stream time; each is recovered from its dedup
// stores when next needed. Call it when tasks may have been restored.
func (s *State) Forget() {
	clear(s.streamTime)
	clear(s.dedupTime)
}

// ForgetTask drops one task's stream time and dedup stream time: the
// task left the replica, and what it knew is not expired or punctuated
// here any more (if it comes back, both are recovered again).
func (s *State) ForgetTask(task statestore.Task) {
	delete(s.streamTime, task)
	delete(s.dedupTime, task)
}

// SetTask scopes the next records to task. The scope must be empty.
func (s *State) SetTask(task statestore.Task) {
	s.task = task
	s.scope.Reset(s.txn, task)
	s.admitted = s.admitted[:0]
}

// Mark marks the record scope's writes so far (see statestore.Scope.Mark).
func (s *State) Mark() int { return s.scope.Mark() }

// Rollback undoes the record scope's writes since mark.
func (s *State) Rollback(mark int) {
	s.scope.Rollback(mark)
	for len(s.admitted) > 0 && s.admitted[len(s.admitted)-1].mark >= mark {
		s.admitted = s.admitted[:len(s.admitted)-1]
	}
}

// Drop discards the record scope's writes.
func (s *State) Drop() {
	s.scope.Drop()
	s.admitted = s.admitted[:0]
}

// Commit moves the record scope's writes into the transaction.
func (s *State) Commit() error {
	if err := s.scope.Commit(); err != nil {
		return err
	}
	for _, a := range s.admitted {
		if a.at.After(s.dedupTime[s.task]) {
			s.dedupTime[s.task] = a.at
		}
	}
	s.admitted = s.admitted[:0]
	return nil
}

// Task is the task the record scope belongs to.
func (s *State) Task() statestore.Task { return s.task }

// StreamTime returns a task's stream time as known so far (zero when the
// task has not been seen since Forget).
func (s *State) StreamTime(task statestore.Task) time.Time { return s.streamTime[task] }

// check refuses a store the task's sub-topology does not declare.
func (s *State) check(store string) (Store, error) {
	st, ok := s.cfg.Stores[store]
	if !ok {
		return st, fmt.Errorf("store %q is not declared by the topology", store)
	}
	if st.Sub != s.task.SubTopology {
		return st, fmt.Errorf("store %q belongs to sub-topology %d, not %d", store, st.Sub, s.task.SubTopology)
	}
	if s.txn == nil {
		return st, graph.ErrNoState
	}
	return st, nil
}

// checkChange asks CheckChange about a change, and tells refused of a
// refusal: a node may drop the error, the record is rejected all the same.
func (s *State) checkChange(store string, key, value []byte) error {
	if s.cfg.CheckChange == nil {
		return nil
	}
	err := s.cfg.CheckChange(store, key, value)
	if err != nil && s.refused != nil {
		s.refused(err)
	}
	return err
}

// Get implements graph.State.
func (s *State) Get(store string, key []byte) ([]byte, bool, error) {
	if _, err := s.check(store); err != nil {
		return nil, false, err
	}
	return s.scope.Get(store, key)
}

// Put implements graph.State.
func (s *State) Put(store string, key, value []byte) error {
	if _, err := s.check(store); err != nil {
		return err
	}
	if err := s.checkChange(store, key, value); err != nil {
		return err
	}
	return s.scope.Put(store, key, value)
}

// Delete implements graph.State.
func (s *State) Delete(store string, key []byte) error {
	if _, err := s.check(store); err != nil {
		return err
	}
	if err := s.checkChange(store, key, nil); err != nil {
		return err
	}
	return s.scope.Delete(store, key)
}

// Range implements graph.State.
func (s *State) Range(store string, start, end []byte, fn func(key, value []byte) bool) error {
	if _, err := s.check(store); err != nil {
		return err
	}
	return s.scope.Range(store, start, end, fn)
}

// Dedup implements graph.State: the event id is new, a duplicate (seen
// with the same payload hash) or a conflict (seen with another), within
// the store's retention by the task's dedup stream time. An entry older
// than that counts as gone even before Expire removes it. A new entry is
// stamped with that stream time, not the record's own timestamp: it is
// remembered for the retention from when the task saw it, however late the
// record was stamped.
//
// The dedup stream time is the latest stamp of the task's entries, with
// the record's own timestamp (bounded) for the decision at hand: a record
// that leaves no entry (a duplicate, a conflict, one whose writes roll
// back) does not move it, so a restart or a move, which recovers it from
// the entries, decides every later record the same.
func (s *State) Dedup(store string, eventID []byte, hash [32]byte, eventTime time.Time) (graph.DedupResult, error) {
	st, err := s.check(store)
	if err != nil {
		return 0, err
	}
	prev, seen, err := s.scope.GetDedup(store, eventID)
	if err != nil {
		return 0, err
	}
	if _, err := s.observe(eventTime); err != nil {
		return 0, err
	}
	now, err := s.dedupNow(eventTime)
	if err != nil {
		return 0, err
	}
	if seen && !prev.FirstSeen.Before(now.Add(-st.Retention)) {
		if prev.PayloadHash == hash {
			return graph.DedupDuplicate, nil
		}
		return graph.DedupConflict, nil
	}
	entry := statestore.DedupEntry{FirstSeen: now, PayloadHash: hash}
	if s.cfg.Source != nil {
		entry.Source = s.cfg.Source()
	}
	if s.cfg.CheckChange != nil {
		if err := s.checkChange(store, eventID, statestore.EncodeDedup(entry)); err != nil {
			return 0, err
		}
	}
	mark := s.scope.Mark()
	if err := s.scope.PutDedup(store, eventID, entry); err != nil {
		return 0, err
	}
	s.admitted = append(s.admitted, admitted{mark: mark, at: now})
	return graph.DedupNew, nil
}

// dedupNow is the task's dedup stream time (recovered from its entries
// the first time it is needed after Forget, with the record scope's own
// entries) moved by t, bounded by Now + MaxClockSkew.
func (s *State) dedupNow(t time.Time) (time.Time, error) {
	now, ok := s.dedupTime[s.task]
	if !ok {
		var err error
		if now, err = s.recover(s.task); err != nil {
			return time.Time{}, err
		}
		s.dedupTime[s.task] = now
	}
	for _, a := range s.admitted {
		if a.at.After(now) {
			now = a.at
		}
	}
	if limit := s.cfg.Now().Add(s.cfg.MaxClockSkew); t.After(limit) {
		t = limit
	}
	if t.After(now) {
		now = t
	}
	return now, nil
}

// ObserveTime implements graph.State: it advances the task's stream time
// with t and returns t bounded by Now + MaxClockSkew.
func (s *State) ObserveTime(t time.Time) (time.Time, error) {
	if s.txn == nil {
		return time.Time{}, graph.ErrNoState
	}
	if _, err := s.observe(t); err != nil {
		return time.Time{}, err
	}
	if limit := s.cfg.Now().Add(s.cfg.MaxClockSkew); t.After(limit) {
		return limit, nil
	}
	return t, nil
}

// observe advances the task's stream time (the largest event time seen)
// and returns it. A timestamp more than MaxClockSkew ahead of the wall
// clock advances it only to that bound: one record stamped years ahead must
// not expire every dedup entry. A task's stream time is recovered, the
// first time it is needed after Forget, from the latest entry of its dedup
// stores (which the changelog carries), so it survives restarts and moves.
func (s *State) observe(t time.Time) (time.Time, error) {
	now, ok := s.streamTime[s.task]
	if !ok {
		var err error
		if now, err = s.recover(s.task); err != nil {
			return time.Time{}, err
		}
	}
	if limit := s.cfg.Now().Add(s.cfg.MaxClockSkew); t.After(limit) {
		if s.cfg.Skewed != nil {
			s.cfg.Skewed(s.task, t)
		}
		t = limit
	}
	if t.After(now) {
		now = t
	}
	s.streamTime[s.task] = now
	return now, nil
}

// recover reads a task's stream time back from its dedup stores.
func (s *State) recover(task statestore.Task) (time.Time, error) {
	var now time.Time
	for _, name := range s.dedupStores {
		if s.cfg.Stores[name].Sub != task.SubTopology {
			continue
		}
		t, ok, err := s.txn.LatestDedup(name, task)
		if err != nil {
			return time.Time{}, err
		}
		if ok && t.After(now) {
			now = t
		}
	}
	return now, nil
}

// Expire removes, from the open transaction, up to limit dedup entries per
// store and task that are older than the task's dedup stream time minus
// the store's retention (limit <= 0: all), and returns how many it removed.
// Their tombstones join the transaction's changes.
func (s *State) Expire(limit int) (int, error) {
	n := 0
	for _, name := range s.dedupStores {
		st := s.cfg.Stores[name]
		for task, now := range s.dedupTime {
			if task.SubTopology != st.Sub {
				continue
			}
			expired, err := s.txn.ExpireDedup(name, task, now.Add(-st.Retention), limit)
			if err != nil {
				return n, err
			}
			n += len(expired)
		}
	}
	return n, nil
}
