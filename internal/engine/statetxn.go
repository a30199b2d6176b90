package engine

// The state side of a session's transactions: the task state records and
// punctuations run on, the Pebble transaction that holds their writes
// until the Kafka transaction commits, and the changelog records it owes.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/statestore"
)

// changelogProducer is what the state's transaction needs of the
// producer: to send changelog records and learn the offsets they got.
type changelogProducer interface {
	Send(m *kafka.Message)
	ResetTracked()
	TrackedOffsets(ctx context.Context) (map[string]map[int32]int64, error)
}

// stateTxn is a session's local state transaction. Without stores (no
// database) it never opens one, and records run on the task state alone.
type stateTxn struct {
	r       *restorer // the database and the stores' changelogs
	m       *metrics
	hooks   Hooks
	timeout time.Duration // bound of the wait for the changelog offsets

	state *taskstate.State
	exec  *taskstate.Executor // runs records and punctuations on state
	txn   *statestore.Txn     // nil outside a transaction
	sent  int                 // changes of txn sent to their changelogs
	seen  map[changeKey]struct{}
	send  []bool // scratch of sendChanges
}

// newStateTxn builds the state a session's records are processed on: the
// topology's stores, with the replica's clock, its changelog size limit
// and the lineage of the record being processed (em's).
func newStateTxn(e *Engine, em *emitter) *stateTxn {
	st := &stateTxn{r: e.restorer, m: e.m, hooks: e.cfg.Hooks, timeout: e.cfg.Timeouts.Transaction}
	stores := make(map[string]taskstate.Store, len(e.restorer.stores))
	for name, s := range e.restorer.stores {
		stores[name] = taskstate.Store{Store: s.Store, Sub: s.sub}
	}
	logged := map[statestore.Task]bool{}
	st.state = taskstate.New(taskstate.Config{
		Stores:       stores,
		MaxClockSkew: e.cfg.MaxClockSkew,
		Now:          e.cfg.Now,
		// A state change whose changelog record would exceed the limit
		// is refused.
		CheckChange: func(store string, key, value []byte) error {
			return em.policy.checkSize(e.restorer.stores[store].topic, key, value, nil, nil)
		},
		Source: em.source,
		Skewed: func(task statestore.Task, ts time.Time) {
			e.m.skewed.Inc()
			if !logged[task] {
				logged[task] = true
				e.log.Warn("record timestamp is beyond the wall clock plus the allowed skew; stream time advances only to that bound (logged once per task and session)",
					"task", task.String(), "source", em.source(), "timestamp", ts, "max_clock_skew", e.cfg.MaxClockSkew)
			}
		},
	})
	st.exec = taskstate.NewExecutor(st.state)
	return st
}

// begin opens the state transaction of a Kafka transaction (with stores).
func (st *stateTxn) begin(p changelogProducer) {
	if st.r.db == nil {
		return
	}
	st.txn = st.r.db.Begin()
	st.state.Begin(st.txn)
	st.sent = 0
	p.ResetTracked()
}

// open reports whether a state transaction is open.
func (st *stateTxn) open() bool { return st.txn != nil }

// empty reports whether the state transaction holds no change.
func (st *stateTxn) empty() bool { return st.txn == nil || st.txn.Empty() }

// stage moves a record's state writes from its scope into the
// transaction.
func (st *stateTxn) stage() error {
	if st.txn == nil {
		return nil
	}
	return st.state.Commit()
}

// expireDedup removes, per task, dedup entries older than its stream time
// minus the store's retention, at most 10,000 per store and task in one
// transaction; their tombstones join the changelog.
func (st *stateTxn) expireDedup() error {
	n, err := st.state.Expire(10000)
	st.m.expired.Add(int64(n))
	return err
}

// changelogChunk is how many unsent state changes an input batch leaves
// for later: below it, they wait for a later batch or the commit, so a
// key written in several batches is sent once.
//
// Measured with BenchmarkOrders (exactly-once, 30,000 events, embedded
// broker in the process), six pairs against sending after every batch on
// a loaded two-core machine: 2.10 -> 1.65-1.79 changelog records per
// event, CPU per event 24.4 -> 23.4 us (median; lower in 5 of 6 pairs),
// throughput without a consistent difference. Sending everything at commit
// (1.59-1.75 records per event) cost more CPU (23.5 -> 25.2 us) and
// throughput in each of 3 pairs: the commit waited for the whole
// changelog, and the transactions shrank under that pressure.
const changelogChunk = 8192

// sendChunk sends, after an input batch, the transaction's unsent state
// changes to their changelogs once they are changelogChunk or more (see
// sendChanges).
func (st *stateTxn) sendChunk(p changelogProducer) {
	if len(st.txn.Changes())-st.sent >= changelogChunk {
		st.sendChanges(p)
	}
}

// sendChanges sends the transaction's unsent state changes to their
// changelogs: from sendChunk, and at commit. Only the last write of each
// key among them is sent: a hot key (a running total) written by every
// record costs one changelog record per chunk, not one per record, and a
// restore, which sees the transaction whole or not at all, only ever needs
// the last value. Sending chunks as the transaction takes input, rather
// than everything at commit, keeps the commit short: the changelog
// partitions join the transaction (AddPartitionsToTxn) and their records
// are on the wire while the transaction is still taking input.
func (st *stateTxn) sendChanges(p changelogProducer) {
	changes := st.txn.Changes()
	chunk := changes[st.sent:]
	if len(chunk) == 0 {
		return
	}
	// Walk back from the newest change: the first time a key is met is its
	// last write in the chunk, the one to send.
	if st.seen == nil {
		st.seen = map[changeKey]struct{}{}
	}
	clear(st.seen)
	st.send = slices.Grow(st.send[:0], len(chunk))[:len(chunk)]
	for i := len(chunk) - 1; i >= 0; i-- {
		c := &chunk[i]
		k := changeKey{c.Store, c.Task, string(c.Key)}
		_, later := st.seen[k]
		st.send[i] = !later
		if !later {
			st.seen[k] = struct{}{}
		}
	}
	sent := len(st.seen)
	now := time.Now()
	collapsed := len(chunk) - sent
	for i, c := range chunk {
		if !st.send[i] {
			continue
		}
		s := st.r.stores[c.Store]
		var value []byte
		if !c.Tombstone {
			value = c.Value
		}
		p.Send(&kafka.Message{Topic: s.topic, Partition: c.Task.Partition, Key: c.Key, Value: value, Track: true, Timestamp: now})
	}
	st.sent = len(changes)
	st.m.changesSent.Add(int64(sent))
	st.m.changesCollapsed.Add(int64(collapsed))
}

// changeKey identifies a state key across stores and tasks.
type changeKey struct {
	store string
	task  statestore.Task
	key   string
}

// apply writes the committed transaction's state to Pebble with each
// touched task's changelog offset, and ends it; on error the caller
// discards it.
func (st *stateTxn) apply(p changelogProducer) error {
	if h := st.hooks.ApplyError; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), st.timeout)
	defer cancel()
	tracked, err := p.TrackedOffsets(ctx)
	if err != nil {
		return fmt.Errorf("changelog offsets: %w", err)
	}
	offsets := map[statestore.StoreTask]int64{}
	for topic, parts := range tracked {
		name, ok := st.r.byTopic[topic]
		if !ok {
			continue
		}
		for p, off := range parts {
			offsets[statestore.StoreTask{Store: name, Task: statestore.Task{SubTopology: st.r.stores[name].sub, Partition: p}}] = off
		}
	}
	if err := st.txn.Apply(offsets); err != nil {
		return err
	}
	st.txn = nil
	st.state.Begin(nil)
	return nil
}

// discard drops the open state transaction, if any.
func (st *stateTxn) discard() {
	if st.txn == nil {
		return
	}
	st.txn.Discard()
	st.txn = nil
	st.state.Begin(nil)
}
