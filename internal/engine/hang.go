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

	"github.com/onceflow/onceflow/internal/kafka"
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

// sighting is an open transaction the watcher saw: the coordinator's
// identity of it, and when the watcher first saw it, by the replica's
// monotonic clock.
type sighting struct {
	producerID int64
	epoch      int16
	start      time.Time // the coordinator's stamp, by its own clock
	first      time.Time
}

// same reports whether d describes the transaction s saw.
func (s sighting) same(d kafka.TxnDescription) bool {
	return s.producerID == d.ProducerID && s.epoch == d.Epoch && s.start.Equal(d.Start) && !s.first.IsZero()
}

// hangWatch checks the replica's transaction on each tick until ctx ends.
// A transaction the checks have seen open, the same one (producer id,
// epoch and the coordinator's start stamp), for longer than the
// transaction timeout plus hangGrace is hanging. Its age is measured on
// the replica's clock alone, from the first check that saw it: the
// coordinator's stamp is by the broker's clock, and a replica whose clock
// runs ahead of it by more than that bound would otherwise take every
// transaction of a busy replica for a hanging one. A hanging transaction
// is counted and logged, and, while the
// coordinator still has it Ongoing, recovered: the session ends and the
// producer is created again with the same transactional id, whose
// InitProducerId bumps the epoch and aborts it (at most maxHangRecoveries
// times in a row). One being ended (PrepareCommit, PrepareAbort) waits for
// markers a partition leader has not written; a new producer would wait
// for them too, so it is only reported.
func (e *Engine) hangWatch(ctx context.Context, tick <-chan time.Time) {
	id := e.transactionalID()
	recoveries := 0
	var seen sighting
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		d, ok, err := e.conn.admin.DescribeTransaction(id)
		if err != nil {
			e.log.Debug("cannot describe the transaction", "transactional_id", id, "error", err)
			continue
		}
		if !ok || !d.Open() {
			recoveries = 0
			seen = sighting{}
			continue
		}
		now := time.Now() // monotonic: differences only
		if !seen.same(d) {
			seen = sighting{producerID: d.ProducerID, epoch: d.Epoch, start: d.Start, first: now}
		}
		age := now.Sub(seen.first)
		if age <= e.cfg.Timeouts.Transaction+hangGrace {
			recoveries = 0
			continue
		}
		e.m.hangingTxns.Inc()
		kv := []any{"transactional_id", id, "state", d.State, "open_for_at_least", age.Round(time.Second), "coordinator_start", d.Start, "transaction_timeout", e.cfg.Timeouts.Transaction,
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
			e.life.reinit.Store(true)
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
