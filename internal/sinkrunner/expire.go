package sinkrunner

import (
	"context"
	"fmt"
	"time"
)

// The ledger would grow forever if no entry left it: a succeeded
// delivery's entry is deleted once it has been settled for the ledger
// retention (sinks.RunnerConfig.LedgerRetention), by a tombstone in the
// changelog (compaction then drops the key) and a delete in Pebble.
// Entries that wait for an operator (dead-lettered, unknown) and entries
// not settled stay. A succeeded entry is never written again, so its
// deletion races no delivery.

// DefaultExpireInterval is how often, at most, the runner looks for
// expired entries in the ledgers of the partitions it owns.
const DefaultExpireInterval = 10 * time.Minute

// expireBatch bounds the tombstones one ledger write carries.
const expireBatch = 512

// expired reports whether a ledger entry may be deleted at now.
func (e Entry) expired(retention time.Duration, now time.Time) bool {
	return retention >= 0 && e.State == Succeeded && now.Sub(e.Updated) > retention
}

// expireLoop deletes the expired entries of the session's partitions every
// expire interval.
func (ss *session) expireLoop() {
	r := ss.r
	if r.cfg.Sinks.LedgerRetention < 0 {
		return
	}
	for {
		if err := r.cfg.Sleep(ss.ctx, r.cfg.ExpireInterval); err != nil {
			return
		}
		for _, ps := range ss.parts {
			for _, p := range ps {
				n, err := r.expire(ss.ctx, p)
				if err != nil {
					if ss.ctx.Err() == nil {
						r.log.Warn("cannot delete expired ledger entries; trying again later", "sink", p.sink.name, "partition", p.part, "error", err)
					}
					continue
				}
				if n > 0 {
					r.log.Info("expired ledger entries deleted", "sink", p.sink.name, "partition", p.part, "count", n,
						"retention", r.cfg.Sinks.LedgerRetention)
				}
			}
		}
	}
}

// expire deletes the expired entries of one partition's ledger and
// returns how many.
func (r *Runner) expire(ctx context.Context, p *partition) (int, error) {
	now := r.cfg.Now()
	retention := r.cfg.Sinks.LedgerRetention
	var ws []*write
	err := r.ledgers.db.Range(p.sink.ledger, task(p.part), nil, nil, func(k, v []byte) bool {
		if e, err := DecodeEntry(v); err == nil && e.expired(retention, now) {
			ws = append(ws, &write{ledger: p.sink.ledger, partition: p.part, key: string(k), delete: true})
		}
		return ctx.Err() == nil
	})
	if err != nil {
		return 0, fmt.Errorf("sinkrunner: read ledger %s/%d: %w", p.sink.ledger, p.part, err)
	}
	n := 0
	for len(ws) > 0 && ctx.Err() == nil && !r.crashed.Load() {
		chunk := ws[:min(expireBatch, len(ws))]
		ws = ws[len(chunk):]
		if err := r.ledgers.putAll(ctx, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
	}
	return n, ctx.Err()
}
