package sinkrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/statestore"
)

// ledgers keeps the delivery ledgers of every outbox partition the runner
// owns in Pebble, each backed by a compacted changelog topic. Writes go
// through one goroutine that owns the producers: it sends the changelog
// records (and dead-letter records) of every write waiting, waits for all
// of them to be acknowledged, then applies them to Pebble with the
// changelog offsets, and answers each write. So an entry in Pebble is
// always in the changelog first, and a write that returned survives a
// crash and a move of the partition. A batch that carries a dead letter
// is one Kafka transaction (producer tp), so the dead letter and the
// entry that marks it are both written or neither: a runner that dies or
// fails between the two leaves neither a dead letter its ledger does not
// know (written again after the restart, or beside a delivery parked as
// unknown) nor an entry without its dead letter.
type ledgers struct {
	db     *statestore.DB
	p      *kafka.Producer // idempotent: batches without dead letters
	tp     *kafka.Producer // transactional: batches with dead letters
	reader *kafka.ChangelogReader
	writes chan *write
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	err    error // set once a write failed: the writer is unusable
	// pending holds, per entry, the latest write queued and not yet
	// applied to Pebble: get reads it first, so a write not waited for
	// (see queue) is seen by the deliveries after it.
	pending map[entryKey]*write
	fault   func(key string, e Entry) error
	stats   *ledgerStats // nil: not counted
}

// write is one ledger entry to record, with an optional dead-letter
// record to write with it, or one entry to delete.
type write struct {
	ledger    string // the ledger's changelog topic (and store name)
	partition int32
	key       string
	entry     Entry
	dlq       *kafka.Message
	delete    bool // a tombstone: the entry expired
	// fence: the write is the fence record (see fence), not an entry.
	fence bool
	// offset is, once done, the changelog offset after the batch's
	// last record of the partition.
	offset int64
	done   chan error
}

// entryKey names one ledger entry.
type entryKey struct {
	ledger    string
	partition int32
	key       string
}

// fenceKey keys the fence record of a ledger partition. No idempotency
// key starts with a NUL byte. The record is not applied as an entry:
// Pebble keeps under this key the latest fence before the recorded
// changelog position (storedFence), where a restore's Fold starts.
const fenceKey = "\x00onceflow-fence"

func task(p int32) statestore.Task { return statestore.Task{Partition: p} }

func newLedgers(db *statestore.DB, p, tp *kafka.Producer, reader *kafka.ChangelogReader) *ledgers {
	l := &ledgers{db: db, p: p, tp: tp, reader: reader, writes: make(chan *write, 1024), stop: make(chan struct{}), done: make(chan struct{}),
		pending: map[entryKey]*write{}}
	go l.run()
	return l
}

// get returns the entry of key in a ledger (zero when none). A value that
// does not decode is an error (ErrUndecodable) with an entry that holds
// only that value, in Undecodable.
func (l *ledgers) get(store string, p int32, key string) (Entry, error) {
	l.mu.Lock()
	w, queued := l.pending[entryKey{store, p, key}]
	l.mu.Unlock()
	if queued {
		if w.delete {
			return Entry{}, nil
		}
		return w.entry, nil
	}
	b, ok, err := l.db.Get(store, task(p), []byte(key))
	if err != nil || !ok {
		return Entry{}, err
	}
	e, err := DecodeEntry(b)
	if err != nil {
		return Entry{Undecodable: bytes.Clone(b)}, err
	}
	return e, nil
}

// put records an entry (and its dead-letter record) durably.
func (l *ledgers) put(ctx context.Context, w *write) error { return l.putAll(ctx, []*write{w}) }

// putAll records writes durably, in as few ledger batches as the writer
// makes of them, and returns the first error.
func (l *ledgers) putAll(ctx context.Context, ws []*write) error {
	for _, w := range ws {
		if err := l.queue(ctx, w); err != nil {
			return err
		}
	}
	for _, w := range ws {
		if err := l.wait(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// queue hands a write to the writer without waiting for it; wait does.
// Writes are applied in the order they were queued, each batch after the
// one before it, and once one fails every later one fails: a write that
// returned from wait without an error was preceded in the changelog and
// in Pebble by every write queued before it. get sees a queued write at
// once.
func (l *ledgers) queue(ctx context.Context, w *write) error {
	w.done = make(chan error, 1)
	if !w.fence {
		l.mu.Lock()
		l.pending[entryKey{w.ledger, w.partition, w.key}] = w
		l.mu.Unlock()
	}
	select {
	case l.writes <- w:
		return nil
	case <-l.stop:
		l.applied([]*write{w})
		return errors.New("sinkrunner: ledger closed")
	case <-ctx.Done():
		l.applied([]*write{w})
		return ctx.Err()
	}
}

// wait waits until a queued write is durable, or failed.
func (l *ledgers) wait(ctx context.Context, w *write) error {
	select {
	case err := <-w.done:
		return err
	case <-l.done:
		select {
		case err := <-w.done:
			return err
		default:
			return errors.New("sinkrunner: ledger closed")
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// applied forgets the pending writes of a batch that was applied (or
// failed: get then reads Pebble, and the writer fails every later write).
func (l *ledgers) applied(batch []*write) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range batch {
		k := entryKey{w.ledger, w.partition, w.key}
		if l.pending[k] == w {
			delete(l.pending, k)
		}
	}
}

// fence records in a ledger partition's changelog that this runner is
// taking the partition, and returns the changelog offset after that
// record (the writer ends a batch with it, so it is the last record of
// its partition there): the generation of the fence of the runner's
// deliveries from the partition (sinks.Fence). Offsets of one partition only rise, whatever
// happens to the group, so a later owner's fence, recorded after this
// one, is higher.
func (l *ledgers) fence(ctx context.Context, store string, p int32) (int64, error) {
	w := &write{ledger: store, partition: p, key: fenceKey, fence: true}
	if err := l.put(ctx, w); err != nil {
		return 0, err
	}
	return w.offset, nil
}

// close stops the writer once the writes queued are done.
func (l *ledgers) close() {
	close(l.stop)
	<-l.done
}

func (l *ledgers) run() {
	defer close(l.done)
	for {
		var batch []*write
		select {
		case w := <-l.writes:
			batch = append(batch, w)
		case <-l.stop:
			return
		}
		// A fence ends its batch: its generation is the offset after its
		// own record, what a restore's Fold computes.
	fill:
		for len(batch) < 512 && !batch[len(batch)-1].fence {
			select {
			case w := <-l.writes:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		start := time.Now()
		err := l.apply(batch)
		l.applied(batch)
		if l.stats != nil {
			l.stats.batches.Add(1)
			l.stats.writes.Add(int64(len(batch)))
			l.stats.busy.Add(int64(time.Since(start)))
		}
		for _, w := range batch {
			w.done <- err
		}
	}
}

// apply writes a batch: changelog and dead-letter records, acknowledged
// (committed, when the batch holds a dead letter), then Pebble.
func (l *ledgers) apply(batch []*write) error {
	l.mu.Lock()
	failed := l.err
	l.mu.Unlock()
	if failed != nil {
		return failed
	}
	var err error
	if l.fault != nil {
		for _, w := range batch {
			if err == nil {
				err = l.fault(w.key, w.entry)
			}
		}
	}
	if err != nil {
		return l.fail(err)
	}
	start := time.Now()
	p := l.p
	if slices.ContainsFunc(batch, func(w *write) bool { return w.dlq != nil }) {
		p = l.tp
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	p.ResetTracked()
	if p == l.tp {
		if err := p.Begin(); err != nil {
			return l.fail(err)
		}
	}
	for _, w := range batch {
		if w.dlq != nil {
			p.Send(w.dlq)
		}
		m := &kafka.Message{Topic: w.ledger, Partition: w.partition, Key: []byte(w.key), Value: EncodeEntry(w.entry), Track: true}
		switch {
		case w.delete:
			m.Value = nil
		case w.fence:
			m.Value = fenceValue
		}
		p.Send(m)
	}
	if p == l.tp {
		if err = p.Commit(ctx); err != nil {
			if aerr := p.Abort(ctx); aerr != nil {
				err = fmt.Errorf("%w (abort: %v)", err, aerr)
			}
		}
	} else {
		err = p.Flush(ctx)
	}
	var offsets map[string]map[int32]int64
	if err == nil {
		offsets, err = p.TrackedOffsets(ctx)
	}
	if l.stats != nil {
		acked := time.Now()
		l.stats.acked.Add(int64(acked.Sub(start)))
		defer func() { l.stats.applied.Add(int64(time.Since(acked))) }()
	}
	if err == nil {
		txn := l.db.Begin()
		defer txn.Discard()
		sent := map[statestore.StoreTask]int64{}
		var fence *write
		for _, w := range batch {
			w.offset = offsets[w.ledger][w.partition]
			sent[statestore.StoreTask{Store: w.ledger, Task: task(w.partition)}]++
			if w.fence {
				fence = w
				continue
			}
			if w.delete {
				err = txn.Delete(w.ledger, task(w.partition), []byte(w.key))
			} else {
				err = txn.Put(w.ledger, task(w.partition), []byte(w.key), EncodeEntry(w.entry))
			}
			if err != nil {
				break
			}
		}
		var applied map[statestore.StoreTask]int64
		if err == nil {
			applied, err = l.positions(sent, offsets)
		}
		if err == nil && fence != nil && applied[statestore.StoreTask{Store: fence.ledger, Task: task(fence.partition)}] == fence.offset {
			// The fence is kept in Pebble only once the position is past
			// it: a restore from an earlier position reads it again.
			err = txn.Put(fence.ledger, task(fence.partition), []byte(fenceKey), storedFence(fence.offset))
		}
		if err == nil {
			err = txn.Apply(applied)
		}
	}
	if err != nil {
		return l.fail(err)
	}
	return nil
}

// positions returns the changelog position to record per ledger
// partition after a batch that sent n records to it and whose last one
// ended before after. It is after when the batch's records directly
// follow the recorded position, as when this runner is the partition's
// only writer. Otherwise another runner wrote in between (this one lost
// the partition and wrote once more, as a zombie, after the new owner
// had written), and the position stays where it was, so the next restore
// reads the other runner's entries, this batch's again after them. A
// transaction's commit marker (a batch with a dead letter) leaves such a
// gap too: which offset holds the marker is not known here, so the
// position stays until a restore reads past it.
func (l *ledgers) positions(sent map[statestore.StoreTask]int64, offsets map[string]map[int32]int64) (map[statestore.StoreTask]int64, error) {
	pos := make(map[statestore.StoreTask]int64, len(sent))
	for st, n := range sent {
		prev, ok, err := l.db.Offset(st.Store, st.Task)
		if err != nil {
			return nil, err
		}
		if !ok {
			prev = 0 // restore reads such a partition from its start
		}
		after := offsets[st.Store][st.Task.Partition]
		if after-n == prev {
			pos[st] = after
		} else {
			pos[st] = prev
		}
	}
	return pos, nil
}

// fail makes the writer unusable after a failed write: which of its
// records reached the changelog is not known, so the runner opens the
// ledgers again and restores them.
func (l *ledgers) fail(err error) error {
	err = fmt.Errorf("sinkrunner: ledger write: %w", err)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
	return err
}

// failed returns the error of the write that failed, if one did.
func (l *ledgers) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// restored is what a ledger restore found.
type restored struct {
	unknown int // entries parked as unknown
	stale   int // changelog entries skipped as a zombie's (see Fold)
	// staleKeys are the keys of those entries: the zombie's record is
	// their latest in the changelog, the one compaction keeps, until
	// the owner writes them again (repair).
	staleKeys []string
}

// restore brings the ledger of an outbox partition up to its changelog's
// end, from the offset Pebble has recorded (from the start when the
// changelog no longer holds it), applying the fence rule (Fold). A
// restore onto local state that skips a stale entry starts again from
// nothing: the local state may hold that entry, applied when this runner
// wrote it as a zombie, and only the changelog knows what it replaced.
func (l *ledgers) restore(ctx context.Context, store string, p int32) (restored, error) {
	from, ok, err := l.db.Offset(store, task(p))
	if err != nil {
		return restored{}, err
	}
	if !ok {
		from = 0
	}
	f, stale, err := l.replay(ctx, store, p, from)
	if errors.Is(err, kafka.ErrOffsetGone) || (err == nil && ok && f.Stale > 0) {
		if err = l.db.Wipe(store, task(p)); err == nil {
			var start int64
			if start, _, err = l.reader.Bounds(ctx, store, p); err == nil {
				f, stale, err = l.replay(ctx, store, p, start)
			}
		}
	}
	if err != nil {
		return restored{}, fmt.Errorf("sinkrunner: restore ledger %s/%d: %w", store, p, err)
	}
	res := restored{stale: f.Stale, staleKeys: slices.Sorted(maps.Keys(stale))}
	err = l.db.Range(store, task(p), nil, nil, func(_, v []byte) bool {
		if e, derr := DecodeEntry(v); derr == nil && e.State == Unknown {
			res.unknown++
		}
		return true
	})
	return res, err
}

// replay applies a ledger partition's changelog from offset from to its
// end, through a Fold that starts at the fence Pebble kept, and returns
// the keys of the entries it skipped.
func (l *ledgers) replay(ctx context.Context, store string, p int32, from int64) (*Fold, map[string]bool, error) {
	f, stale := &Fold{}, map[string]bool{}
	if b, ok, err := l.db.Get(store, task(p), []byte(fenceKey)); err != nil {
		return f, stale, err
	} else if e, derr := DecodeEntry(b); ok && derr == nil {
		f.Fence = e.Fence
	}
	apply := func(batch []kafka.ChangelogRecord, next int64) error {
		changes := make([]statestore.Change, 0, len(batch))
		last := map[string]int{} // a key's latest change in this batch
		var getErr error
		for _, r := range batch {
			cur := func() (Entry, bool, error) {
				if i, ok := last[string(r.Key)]; ok {
					if changes[i].Tombstone {
						return Entry{}, false, nil
					}
					e, err := DecodeEntry(changes[i].Value)
					return e, true, err
				}
				b, ok, err := l.db.Get(store, task(p), r.Key)
				if err != nil {
					getErr = err
				}
				if err != nil || !ok {
					return Entry{}, false, err
				}
				e, err := DecodeEntry(b)
				return e, true, err
			}
			c := statestore.Change{Key: r.Key, Value: r.Value, Tombstone: r.Value == nil}
			switch {
			case IsFence(r.Key):
				f.Admit(r.Offset, r.Key, r.Value, cur)
				c = statestore.Change{Key: r.Key, Value: storedFence(f.Fence)}
			case !f.Admit(r.Offset, r.Key, r.Value, cur):
				stale[string(r.Key)] = true
				continue
			}
			last[string(r.Key)] = len(changes)
			changes = append(changes, c)
		}
		if getErr != nil {
			return getErr
		}
		return l.db.Restore(store, task(p), changes, next)
	}
	return f, stale, l.reader.Read(ctx, store, p, from, apply)
}

// repair writes again, under the owner's fence, the entries of keys
// whose latest changelog record a restore skipped as a zombie's, so that
// the record compaction keeps for each is the owner's (a tombstone where
// the ledger has none): once older fence records are compacted away, a
// restore from the start could no longer tell the zombie's apart.
func (l *ledgers) repair(ctx context.Context, store string, p int32, keys []string, fence int64) error {
	ws := make([]*write, 0, len(keys))
	for _, k := range keys {
		b, ok, err := l.db.Get(store, task(p), []byte(k))
		if err != nil {
			return err
		}
		w := &write{ledger: store, partition: p, key: k, delete: !ok}
		if ok {
			if w.entry, err = DecodeEntry(b); err != nil {
				continue // left as it is, parked when its delivery is read
			}
			w.entry.Fence = fence
		}
		ws = append(ws, w)
	}
	return l.putAll(ctx, ws)
}

// dlqMessage is the dead-letter record of an outbox record.
func dlqMessage(topic string, r *kafka.Record, headers []wire.Header) *kafka.Message {
	return &kafka.Message{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: headers, Timestamp: r.Timestamp}
}
