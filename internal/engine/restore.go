package engine

// Restore: local state brought up to its changelogs before a session
// processes input.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// restoreTasks brings the local state of every task of the session up to
// its changelogs before any input is processed: from the offset the local
// state records, or from the start after wiping that task's keyspace when
// the changelog no longer holds that offset or the state is too old to
// trust (see stale). All the changelog partitions are read at once by one
// client, and each (store, task) is applied by its own goroutine in
// unsynced batches, each with the changelog offset it reaches. Only once
// every one has reached its end are the tasks marked owned as of the
// session's start, synced with the batches: a restore cut short (a crash,
// a revoke) leaves the state as old as it was, and the next start resumes
// it from its offset if it is still fresh enough, or wipes it. A restore
// from nothing is dated by its start until it completes.
func (r *restorer) restoreTasks(ctx context.Context, claims map[string][]int32) error {
	began := r.now()
	sts := r.storeTasks(claims)
	ranges := make([]kafka.ChangelogRange, len(sts))
	fresh := make([]bool, len(sts)) // no local state to keep: read from the log start, no wipe
	var cold []statestore.StoreTask // restored from nothing
	for i, st := range sts {
		from, ok, err := r.restoreFrom(ctx, st)
		if err != nil {
			return err
		}
		ranges[i] = kafka.ChangelogRange{Topic: r.stores[st.Store].topic, Partition: st.Task.Partition, From: from}
		fresh[i] = !ok
		if !ok {
			cold = append(cold, st)
		}
	}
	if err := r.db.MarkRestoring(began, cold...); err != nil {
		return fmt.Errorf("engine: restore: %w", err)
	}
	gone := func(i int, start int64) error {
		if fresh[i] {
			return nil
		}
		st := sts[i]
		r.log.Named("restore").Warn("changelog no longer holds the local offset; wiping the task's store and restoring it fully",
			"store", st.Store, "task", st.Task.String(), "offset", ranges[i].From, "log_start", start)
		if err := r.wipe(st); err != nil {
			return err
		}
		if err := r.db.MarkRestoring(began, st); err != nil {
			return fmt.Errorf("engine: restore %s: %w", st, err)
		}
		return nil
	}
	if err := r.replay(ctx, sts, ranges, gone); err != nil {
		return err
	}
	if err := r.db.MarkRestored(began, sts...); err != nil {
		return fmt.Errorf("engine: restore: %w", err)
	}
	return nil
}

// restoreFrom returns the changelog offset st's restore starts from: the
// one its local state records (ok), or 0 when it has none or its state was
// too old to trust and is wiped.
func (r *restorer) restoreFrom(ctx context.Context, st statestore.StoreTask) (from int64, ok bool, err error) {
	from, ok, err = r.db.Offset(st.Store, st.Task)
	if err != nil || !ok {
		return 0, false, wrapRestore(st, err)
	}
	stale, why, err := r.stale(r.stores[st.Store], st)
	if err != nil || !stale {
		return from, true, err
	}
	r.log.Named("restore").Warn("local state is older than the changelog's tombstone retention; wiping the task's store and restoring it fully",
		"store", st.Store, "task", st.Task.String(), "offset", from, "reason", why)
	return 0, false, r.wipe(st)
}

func (r *restorer) wipe(st statestore.StoreTask) error {
	r.m.wipes.Inc()
	if err := r.db.Wipe(st.Store, st.Task); err != nil {
		return fmt.Errorf("engine: wipe %s: %w", st, err)
	}
	return nil
}

func wrapRestore(st statestore.StoreTask, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("engine: restore %s: %w", st, err)
}

// restoreBatch is one fetched batch of a changelog partition; size is
// what it holds of restoreInFlight.
type restoreBatch struct {
	records []kafka.ChangelogRecord
	next    int64
	size    int64
}

// restoreInFlight bounds the memory of the changelog batches a restore
// has read and not yet applied, over all its (store, task) pairs: the
// reader waits for the appliers beyond it, so a session of many tasks
// does not hold their changelogs in memory. Measured on a cold restore of
// 24 stores and tasks (2.5M records, real Kafka): peak RSS 420-440 MB
// at 16 MiB, 650-710 MB with batches bounded only by the fetch sizes (the
// sequential restore before: 240 MB), at the same speed.
const restoreInFlight = 16 << 20

// recordOverhead is what a batch holds per record besides its key and
// value: its kafka.ChangelogRecord and statestore.Change.
const recordOverhead = 96

// batchSize is what b holds of restoreInFlight, at most all of it (so
// that any batch can go through).
func batchSize(b []kafka.ChangelogRecord) int64 {
	n := int64(recordOverhead * len(b))
	for _, r := range b {
		n += int64(len(r.Key) + len(r.Value))
	}
	return min(n, restoreInFlight)
}

// replay reads the changelog ranges of sts (ranges[i] is sts[i]'s) and
// applies each (store, task)'s batches on a goroutine of its own, while
// the reader fetches the next ones.
func (r *restorer) replay(ctx context.Context, sts []statestore.StoreTask, ranges []kafka.ChangelogRange, gone func(int, int64) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make([]chan restoreBatch, len(sts))
	errs := make([]error, len(sts))
	inFlight := semaphore.NewWeighted(restoreInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	for i, st := range sts {
		work[i] = make(chan restoreBatch, 1)
		wg.Go(func() {
			if errs[i] = r.applyRestore(st, ranges[i].From, start, work[i], inFlight); errs[i] != nil {
				cancel()
				for b := range work[i] { // drain, so that the reader never blocks
					inFlight.Release(b.size)
				}
			}
		})
	}
	err := r.reader.ReadAll(ctx, ranges, gone, func(i int, batch []kafka.ChangelogRecord, next int64) error {
		b := restoreBatch{batch, next, batchSize(batch)}
		if err := inFlight.Acquire(ctx, b.size); err != nil {
			return err
		}
		select {
		case work[i] <- b:
			return nil
		case <-ctx.Done():
			inFlight.Release(b.size)
			return ctx.Err()
		}
	})
	for _, ch := range work {
		close(ch)
	}
	wg.Wait()
	if werr := errors.Join(errs...); werr != nil {
		return werr // the cause; the reader's error is then the cancellation
	}
	if err != nil {
		return fmt.Errorf("engine: restore: %w", err)
	}
	return nil
}

// applyRestore applies the batches of st's changelog that come on work, in
// order, each atomically with the offset it reaches.
func (r *restorer) applyRestore(st statestore.StoreTask, from int64, start time.Time, work <-chan restoreBatch, inFlight *semaphore.Weighted) error {
	log := r.log.Named("restore").With("store", st.Store, "task", st.Task.String())
	var sr *statestore.Restorer
	var n int64
	for b := range work {
		err := r.applyBatch(st, &sr, b)
		inFlight.Release(b.size)
		if err != nil {
			return err
		}
		n += int64(len(b.records))
		r.m.restored.Add(int64(len(b.records)))
		if n > 0 && n%100000 < int64(len(b.records)) {
			log.Info("restoring", "records", n, "offset", b.next)
		}
	}
	took := time.Since(start)
	r.m.restoreTime.Observe(took.Seconds())
	if n > 0 {
		log.Info("restored", "records", n, "from_offset", from, "seconds", took.Seconds(), "records_per_sec", float64(n)/max(took.Seconds(), 1e-9))
	}
	return nil
}

// applyBatch applies b to st through *sr, which it makes at the first
// batch: after any wipe, since the reader wipes before it fetches.
func (r *restorer) applyBatch(st statestore.StoreTask, sr **statestore.Restorer, b restoreBatch) error {
	if *sr == nil {
		var err error
		if *sr, err = r.db.NewRestorer(st.Store, st.Task); err != nil {
			return wrapRestore(st, err)
		}
	}
	changes := make([]statestore.Change, len(b.records))
	for i, c := range b.records {
		changes[i] = statestore.Change{Key: c.Key, Value: c.Value, Tombstone: c.Value == nil}
	}
	if h := r.hooks.BeforeRestoreBatch; h != nil {
		if err := h(r.stores[st.Store].topic, st.Task.Partition, len(changes), b.next); err != nil {
			return wrapRestore(st, err)
		}
	}
	return wrapRestore(st, (*sr).Apply(changes, b.next))
}

// storeTasks lists the (store, task) pairs of the claimed partitions, in
// a stable order.
func (r *restorer) storeTasks(claims map[string][]int32) []statestore.StoreTask {
	var out []statestore.StoreTask
	done := map[statestore.StoreTask]bool{}
	for _, topic := range slices.Sorted(maps.Keys(claims)) {
		sub := r.g.SubTopologyOf(topic)
		for _, p := range claims[topic] {
			task := statestore.Task{SubTopology: sub, Partition: p}
			for _, name := range slices.Sorted(maps.Keys(r.stores)) {
				st := statestore.StoreTask{Store: name, Task: task}
				if r.stores[name].sub != sub || done[st] {
					continue
				}
				done[st] = true
				out = append(out, st)
			}
		}
	}
	return out
}

// restoreWaiting reports a restore that waits for a changelog partition's
// open transactions to end (the previous owner's commit markers, or a
// dead producer's transaction until the broker aborts it).
func (r *restorer) restoreWaiting(topic string, partition int32, stable, end int64) {
	r.m.restoreWaits.Inc()
	r.log.Named("restore").Info("changelog has a transaction open; waiting for it to end",
		"topic", topic, "partition", partition, "last_stable_offset", stable, "end_offset", end, "within", r.timeouts.Transaction)
	if h := r.hooks.RestoreWaiting; h != nil {
		h(topic, partition)
	}
}
