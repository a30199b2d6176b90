package engine

// Restore: local state brought up to its changelogs before a session
// processes input.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// restoreTasks brings the local state of every task of the session up to
// its changelogs before any input is processed: from the offset the local
// state records, or from the start after wiping that task's keyspace when
// the changelog no longer holds that offset or the state is too old to
// trust (see stale). Each restored task is then marked owned as of the
// session's start, durably.
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
	// The marks are not synced by themselves; a crash before the next
	// synced write would lose them and leave the restored tasks looking
	// never owned (wiped and restored fully at the next start).
	if err := e.db.Sync(); err != nil {
		return fmt.Errorf("engine: restore: %w", err)
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
			e.m.wipes.Inc()
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
		e.m.wipes.Inc()
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
	e.m.restoreWaits.Inc()
	e.log.Named("restore").Info("changelog has a transaction open; waiting for it to end",
		"topic", topic, "partition", partition, "last_stable_offset", stable, "end_offset", end, "within", e.cfg.Timeouts.Transaction)
	if h := e.cfg.Hooks.RestoreWaiting; h != nil {
		h(topic, partition)
	}
}
