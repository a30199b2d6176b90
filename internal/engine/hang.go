package engine

// Hanging transactions of the replica's own transactional id: a watcher
// asks the coordinator for the id's transaction and, when one has stayed
// open well past the transaction timeout, fences it with a new producer.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// hangGrace is how long past its timeout a transaction may stay open
// before it counts as hanging: the coordinator aborts expired transactions
// on a periodic pass (Kafka's transaction.abort.timed.out.transaction.
// cleanup.interval.ms, 10 s by default), then writes the abort markers.
const hangGrace = 30 * time.Second

// maxHangRecoveries bounds the producers created again, in a row, for a
// transaction that keeps hanging.
const maxHangRecoveries = 3

// transactionalID is the replica's transactional id ("" at least once).
func (e *Engine) transactionalID() string {
	if !e.cfg.ExactlyOnce {
		return ""
	}
	return e.cfg.AppID + "-" + e.cfg.InstanceID
}

// hangCheckInterval is how often the coordinator is asked: once per
// transaction timeout.
func (e *Engine) hangCheckInterval() time.Duration {
	return max(e.cfg.Timeouts.Transaction, time.Second)
}

// hangWatch checks the replica's transaction on each tick until ctx ends.
// A transaction open for longer than the transaction timeout plus
// hangGrace is hanging: it is counted and logged, and, while the
// coordinator still has it Ongoing, recovered: the session ends and the
// producer is created again with the same transactional id, whose
// InitProducerId bumps the epoch and aborts it (at most maxHangRecoveries
// times in a row). One being ended (PrepareCommit, PrepareAbort) waits for
// markers a partition leader has not written; a new producer would wait
// for them too, so it is only reported.
func (e *Engine) hangWatch(ctx context.Context, tick <-chan time.Time) {
	id := e.transactionalID()
	recoveries := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		d, ok, err := e.admin.DescribeTransaction(id)
		if err != nil {
			e.log.Debug("cannot describe the transaction", "transactional_id", id, "error", err)
			continue
		}
		if !ok || !d.Open() {
			recoveries = 0
			continue
		}
		// The coordinator's clock against ours: both are wall clocks
		// (Config.Now, which tests move, is not the broker's).
		age := time.Since(d.Start)
		if age <= e.cfg.Timeouts.Transaction+hangGrace {
			recoveries = 0
			continue
		}
		e.m.hangingTxns.Inc()
		kv := []any{"transactional_id", id, "state", d.State, "open_for", age.Round(time.Second), "transaction_timeout", e.cfg.Timeouts.Transaction,
			"producer_id", d.ProducerID, "epoch", d.Epoch, "partitions", partitionsString(d.Partitions)}
		switch {
		case d.Ending():
			e.log.Error("hanging transaction: its markers are not written; a partition leader may be unavailable, and a new producer would wait for it too", kv...)
		case recoveries >= maxHangRecoveries:
			e.log.Error(fmt.Sprintf("hanging transaction still open after %d new producers; not trying again until it ends", recoveries), kv...)
		default:
			recoveries++
			e.m.hangRecoveries.Inc()
			e.log.Warn("hanging transaction: creating the producer again to abort it", append(kv, "attempt", recoveries)...)
			e.reinit.Store(true)
			e.rewind()
		}
	}
}

// partitionsString lists partitions as "topic[0 1] other[2]".
func partitionsString(ps map[string][]int32) string {
	var b strings.Builder
	for _, t := range slices.Sorted(maps.Keys(ps)) {
		fmt.Fprintf(&b, "%s%v ", t, ps[t])
	}
	return strings.TrimSpace(b.String())
}
