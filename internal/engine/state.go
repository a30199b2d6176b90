package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// storeInfo is what the engine knows of one store.
type storeInfo struct {
	graph.Store
	sub   int
	topic string // changelog topic
}

// changelogTopic names a store's changelog.
func changelogTopic(app, store string) string { return app + "-" + store + "-changelog" }

// storeInfos lists the graph's stores with their sub-topology and changelog.
func (e *Engine) storeInfos() map[string]storeInfo {
	out := map[string]storeInfo{}
	for _, st := range e.g.SubTopologies {
		for _, s := range st.Stores {
			out[s.Name] = storeInfo{Store: s, sub: st.ID, topic: changelogTopic(e.cfg.AppID, s.Name)}
		}
	}
	return out
}

// openState opens the replica's Pebble database.
func (e *Engine) openState() error {
	var dedup []string
	for name, s := range e.stores {
		if s.Kind == graph.StoreDedup {
			dedup = append(dedup, name)
		}
	}
	slices.Sort(dedup)
	e.dedupStores = dedup
	db, err := statestore.Open(e.cfg.StateDir, statestore.Options{Logger: e.log.Named("state"), DedupStores: dedup})
	if err != nil {
		return fmt.Errorf("engine: state: %w", err)
	}
	e.db = db
	e.byTopic = map[string]string{}
	for name, s := range e.stores {
		e.byTopic[s.topic] = name
	}
	return nil
}

// restoreTasks brings the local state of every task of the session up to
// its changelogs before any input is processed: from the offset the local
// state records, or from the start after wiping that task's keyspace when
// the changelog no longer holds that offset or the state is too old to
// trust (see stale). Each restored task is then marked owned as of the
// session's start.
func (e *Engine) restoreTasks(ctx context.Context, claims map[string][]int32) error {
	began := e.cfg.Now()
	for _, st := range e.storeTasks(claims) {
		if err := e.restore(ctx, e.stores[st.Store], st); err != nil {
			return err
		}
		if err := e.db.MarkOwned(began, st); err != nil {
			return fmt.Errorf("engine: restore %s: %w", st, err)
		}
	}
	return nil
}

// storeTasks lists the (store, task) pairs of the claimed partitions, in
// a stable order.
func (e *Engine) storeTasks(claims map[string][]int32) []statestore.StoreTask {
	var out []statestore.StoreTask
	done := map[statestore.StoreTask]bool{}
	for _, topic := range slices.Sorted(maps.Keys(claims)) {
		sub := e.g.SubTopologyOf(topic)
		for _, p := range claims[topic] {
			task := statestore.Task{SubTopology: sub, Partition: p}
			for _, name := range slices.Sorted(maps.Keys(e.stores)) {
				st := statestore.StoreTask{Store: name, Task: task}
				if e.stores[name].sub != sub || done[st] {
					continue
				}
				done[st] = true
				out = append(out, st)
			}
		}
	}
	return out
}

func (e *Engine) restore(ctx context.Context, s storeInfo, st statestore.StoreTask) error {
	log := e.log.Named("restore").With("store", st.Store, "task", st.Task.String())
	from, ok, err := e.db.Offset(st.Store, st.Task)
	if err != nil {
		return fmt.Errorf("engine: restore %s: %w", st, err)
	}
	if ok {
		stale, why, err := e.stale(s, st)
		if err != nil {
			return err
		}
		if stale {
			log.Warn("local state is older than the changelog's tombstone retention; wiping the task's store and restoring it fully", "offset", from, "reason", why)
			e.c.wipes.Add(1)
			if err := e.db.Wipe(st.Store, st.Task); err != nil {
				return fmt.Errorf("engine: wipe %s: %w", st, err)
			}
			if from, _, err = e.reader.Bounds(ctx, s.topic, st.Task.Partition); err != nil {
				return fmt.Errorf("engine: restore %s: %w", st, err)
			}
		}
	}
	if !ok {
		from = 0
	}
	start := time.Now()
	var n int64
	read := func(from int64) error {
		return e.reader.Read(ctx, s.topic, st.Task.Partition, from, func(batch []kafka.ChangelogRecord, next int64) error {
			changes := make([]statestore.Change, len(batch))
			for i, r := range batch {
				changes[i] = statestore.Change{Store: st.Store, Task: st.Task, Key: r.Key, Value: r.Value, Tombstone: r.Value == nil}
			}
			if err := e.db.Restore(st.Store, st.Task, changes, next); err != nil {
				return err
			}
			n += int64(len(batch))
			e.c.restored.Add(int64(len(batch)))
			e.m.restored.Add(float64(len(batch)))
			if n > 0 && n%100000 < int64(len(batch)) {
				log.Info("restoring", "records", n, "offset", next)
			}
			return nil
		})
	}
	err = read(from)
	if errors.Is(err, kafka.ErrOffsetGone) {
		log.Warn("changelog no longer holds the local offset; wiping the task's store and restoring it fully", "offset", from, "error", err)
		e.c.wipes.Add(1)
		if err := e.db.Wipe(st.Store, st.Task); err != nil {
			return fmt.Errorf("engine: wipe %s: %w", st, err)
		}
		lowest, _, berr := e.reader.Bounds(ctx, s.topic, st.Task.Partition)
		if berr != nil {
			return berr
		}
		err = read(lowest)
	}
	if err != nil {
		return fmt.Errorf("engine: restore %s: %w", st, err)
	}
	took := time.Since(start)
	e.m.restoreTime.Observe(took.Seconds())
	if n > 0 {
		log.Info("restored", "records", n, "from_offset", from, "seconds", took.Seconds(), "records_per_sec", float64(n)/max(took.Seconds(), 1e-9))
	}
	return nil
}

// restoreWaiting reports a restore that waits for a changelog partition's
// open transactions to end (the previous owner's commit markers, or a
// dead producer's transaction until the broker aborts it).
func (e *Engine) restoreWaiting(topic string, partition int32, stable, end int64) {
	e.log.Named("restore").Info("changelog has a transaction open; waiting for it to end",
		"topic", topic, "partition", partition, "last_stable_offset", stable, "end_offset", end, "within", e.cfg.Timeouts.Transaction)
	if h := e.cfg.Hooks.RestoreWaiting; h != nil {
		h(topic, partition)
	}
}

// overlay holds the state writes of the record being processed, so a record
// whose processing fails leaves no state change behind. A record rejected
// by a gate keeps what the gates before it wrote (its event id stays
// remembered).
type overlay struct {
	ops []op
}

type op struct {
	store   string
	key     []byte
	value   []byte // nil: delete
	dedup   *statestore.DedupEntry
	fresh   bool // a dedup entry for an id with none before
	deleted bool
}

// taskState is the graph.State of one driver, scoped to the task of the
// record being processed.
type taskState struct {
	d    *driver
	task statestore.Task
	ov   overlay
}

func (ts *taskState) lookup(store string, key []byte) (op, bool) {
	for i := len(ts.ov.ops) - 1; i >= 0; i-- {
		o := ts.ov.ops[i]
		if o.store == store && bytes.Equal(o.key, key) {
			return o, true
		}
	}
	return op{}, false
}

func (ts *taskState) Get(store string, key []byte) ([]byte, bool, error) {
	if err := ts.d.checkStore(store, ts.task); err != nil {
		return nil, false, err
	}
	if o, ok := ts.lookup(store, key); ok {
		if o.deleted {
			return nil, false, nil
		}
		if o.dedup != nil {
			return statestore.EncodeDedup(*o.dedup), true, nil
		}
		return slices.Clone(o.value), true, nil
	}
	return ts.d.txn.Get(store, ts.task, key)
}

func (ts *taskState) Put(store string, key, value []byte) error {
	if err := ts.d.checkStore(store, ts.task); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	if err := ts.d.checkChange(store, key, value); err != nil {
		return err
	}
	ts.ov.ops = append(ts.ov.ops, op{store: store, key: slices.Clone(key), value: slices.Clone(value)})
	return nil
}

func (ts *taskState) Delete(store string, key []byte) error {
	if err := ts.d.checkStore(store, ts.task); err != nil {
		return err
	}
	if err := ts.d.checkChange(store, key, nil); err != nil {
		return err
	}
	ts.ov.ops = append(ts.ov.ops, op{store: store, key: slices.Clone(key), deleted: true})
	return nil
}

// Range flushes nothing: it merges the record's pending writes over the
// transaction's view, in key order.
func (ts *taskState) Range(store string, start, end []byte, fn func(key, value []byte) bool) error {
	if err := ts.d.checkStore(store, ts.task); err != nil {
		return err
	}
	pending := map[string]op{}
	for _, o := range ts.ov.ops {
		if o.store == store && (start == nil || bytes.Compare(o.key, start) >= 0) && (end == nil || bytes.Compare(o.key, end) < 0) {
			pending[string(o.key)] = o
		}
	}
	if len(pending) == 0 {
		return ts.d.txn.Range(store, ts.task, start, end, fn)
	}
	merged := map[string][]byte{}
	if err := ts.d.txn.Range(store, ts.task, start, end, func(k, v []byte) bool {
		merged[string(k)] = slices.Clone(v)
		return true
	}); err != nil {
		return err
	}
	for k, o := range pending {
		switch {
		case o.deleted:
			delete(merged, k)
		case o.dedup != nil:
			merged[k] = statestore.EncodeDedup(*o.dedup)
		default:
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

func (ts *taskState) Dedup(store string, eventID []byte, hash [32]byte, eventTime time.Time) (graph.DedupResult, error) {
	if err := ts.d.checkStore(store, ts.task); err != nil {
		return 0, err
	}
	var prev statestore.DedupEntry
	var seen bool
	o, inOverlay := ts.lookup(store, eventID)
	if inOverlay {
		if !o.deleted && o.dedup != nil {
			prev, seen = *o.dedup, true
		}
	} else {
		var err error
		if prev, seen, err = ts.d.txn.GetDedup(store, ts.task, eventID); err != nil {
			return 0, err
		}
	}
	now, err := ts.d.observeTime(ts.task, eventTime)
	if err != nil {
		return 0, err
	}
	// An entry older than the retention (by stream time) counts as gone
	// even before the expiry at commit removes it.
	expired := seen && prev.FirstSeen.Before(now.Add(-ts.d.e.stores[store].Retention))
	if seen && !expired {
		if prev.PayloadHash == hash {
			return graph.DedupDuplicate, nil
		}
		return graph.DedupConflict, nil
	}
	// The entry is stamped with the task's stream time, not the record's
	// own timestamp: it is remembered for the retention from when the task
	// saw it, however late the record was stamped, and the latest stamp
	// restores the stream time after a restart or a move.
	entry := statestore.DedupEntry{FirstSeen: now, Source: ts.d.source(), PayloadHash: hash}
	if err := ts.d.checkDedupChange(store, eventID, entry); err != nil {
		return 0, err
	}
	ts.ov.ops = append(ts.ov.ops, op{store: store, key: slices.Clone(eventID), dedup: &entry, fresh: !seen && !inOverlay})
	return graph.DedupNew, nil
}

// flush moves the record's writes into the transaction.
func (ts *taskState) flush() error {
	for _, o := range ts.ov.ops {
		var err error
		switch {
		case o.deleted:
			err = ts.d.txn.Delete(o.store, ts.task, o.key)
		case o.dedup != nil && o.fresh:
			err = ts.d.txn.PutNewDedup(o.store, ts.task, o.key, *o.dedup)
		case o.dedup != nil:
			err = ts.d.txn.PutDedup(o.store, ts.task, o.key, *o.dedup)
		default:
			err = ts.d.txn.Put(o.store, ts.task, o.key, o.value)
		}
		if err != nil {
			return err
		}
	}
	ts.ov.ops = ts.ov.ops[:0]
	return nil
}

// checkStore refuses a store the task's sub-topology does not declare.
func (d *driver) checkStore(store string, task statestore.Task) error {
	s, ok := d.e.stores[store]
	if !ok {
		return fmt.Errorf("store %q is not declared by the topology", store)
	}
	if s.sub != task.SubTopology {
		return fmt.Errorf("store %q belongs to sub-topology %d, not %d", store, s.sub, task.SubTopology)
	}
	if d.txn == nil {
		return graph.ErrNoState
	}
	return nil
}

// observeTime advances a task's stream time (the largest event time seen)
// and returns it. A timestamp more than MaxClockSkew ahead of the wall
// clock advances it only to that bound: one record stamped years ahead
// must not expire every dedup entry. A task's stream time is recovered, the
// first time a session sees the task, from the latest entry of its dedup
// stores (which the changelog carries), so it survives restarts and moves.
func (d *driver) observeTime(task statestore.Task, t time.Time) (time.Time, error) {
	now, ok := d.streamTime[task]
	if !ok {
		var err error
		if now, err = d.recoverStreamTime(task); err != nil {
			return time.Time{}, err
		}
	}
	if limit := d.e.cfg.Now().Add(d.e.cfg.MaxClockSkew); t.After(limit) {
		d.e.m.skewed.Inc()
		if !d.skewLogged[task] {
			d.skewLogged[task] = true
			d.e.log.Warn("record timestamp is beyond the wall clock plus the allowed skew; stream time advances only to that bound (logged once per task and session)",
				"task", task.String(), "source", d.source(), "timestamp", t, "max_clock_skew", d.e.cfg.MaxClockSkew)
		}
		t = limit
	}
	if t.After(now) {
		now = t
	}
	d.streamTime[task] = now
	return now, nil
}

// recoverStreamTime reads a task's stream time back from its dedup stores.
func (d *driver) recoverStreamTime(task statestore.Task) (time.Time, error) {
	var now time.Time
	for _, name := range d.e.dedupStores {
		if d.e.stores[name].sub != task.SubTopology {
			continue
		}
		t, ok, err := d.txn.LatestDedup(name, task)
		if err != nil {
			return time.Time{}, err
		}
		if ok && t.After(now) {
			now = t
		}
	}
	return now, nil
}

// produceChanges sends the transaction's unsent state changes to their
// changelogs: after each input batch, and at commit. Only the last write of
// each key among them is sent: a hot key (a running total) written by every
// record of a batch costs one changelog record per batch, not one per
// record, and a restore, which sees the transaction whole or not at all,
// only ever needs the last value. Sending per batch rather than at commit
// keeps the commit short: the changelog partitions join the transaction
// (AddPartitionsToTxn) and their records are on the wire while the
// transaction is still taking input.
func (d *driver) produceChanges() {
	changes := d.txn.Changes()
	chunk := changes[d.changesSent:]
	if len(chunk) == 0 {
		return
	}
	// Walk back from the newest change: the first time a key is met is its
	// last write in the chunk, the one to send.
	if d.seen == nil {
		d.seen = map[changeKey]struct{}{}
	}
	clear(d.seen)
	d.send = slices.Grow(d.send[:0], len(chunk))[:len(chunk)]
	for i := len(chunk) - 1; i >= 0; i-- {
		c := &chunk[i]
		k := changeKey{c.Store, c.Task, string(c.Key)}
		_, later := d.seen[k]
		d.send[i] = !later
		if !later {
			d.seen[k] = struct{}{}
		}
	}
	sent := len(d.seen)
	collapsed := len(chunk) - sent
	for i, c := range chunk {
		if !d.send[i] {
			continue
		}
		s := d.e.stores[c.Store]
		var value []byte
		if !c.Tombstone {
			value = c.Value
		}
		d.p.Send(&kafka.Message{Topic: s.topic, Partition: c.Task.Partition, Key: c.Key, Value: value, Track: true, Timestamp: time.Now()})
	}
	d.changesSent = len(changes)
	d.e.c.changelog.Add(int64(sent))
	d.e.c.collapsed.Add(int64(collapsed))
	d.e.m.stateChanges.WithLabelValues("sent").Add(float64(sent))
	d.e.m.stateChanges.WithLabelValues("collapsed").Add(float64(collapsed))
}

// changeKey identifies a state key across stores and tasks.
type changeKey struct {
	store string
	task  statestore.Task
	key   string
}

// expireDedup removes, per task, dedup entries older than its stream time
// minus the store's retention; their tombstones join the changelog.
func (d *driver) expireDedup() error {
	for name, s := range d.e.stores {
		if s.Kind != graph.StoreDedup {
			continue
		}
		for task, now := range d.streamTime {
			if task.SubTopology != s.sub {
				continue
			}
			expired, err := d.txn.ExpireDedup(name, task, now.Add(-s.Retention), 10000)
			if err != nil {
				return err
			}
			d.e.c.expired.Add(int64(len(expired)))
		}
	}
	return nil
}

// applyState writes the committed transaction's state to Pebble with each
// touched task's changelog offset.
func (d *driver) applyState() error {
	ctx, cancel := context.WithTimeout(context.Background(), d.e.cfg.Timeouts.Transaction)
	defer cancel()
	tracked, err := d.p.TrackedOffsets(ctx)
	if err != nil {
		return fmt.Errorf("changelog offsets: %w", err)
	}
	offsets := map[statestore.StoreTask]int64{}
	for topic, parts := range tracked {
		name, ok := d.e.byTopic[topic]
		if !ok {
			continue
		}
		for p, off := range parts {
			offsets[statestore.StoreTask{Store: name, Task: statestore.Task{SubTopology: d.e.stores[name].sub, Partition: p}}] = off
		}
	}
	return d.txn.Apply(offsets)
}
