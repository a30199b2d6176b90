package sinkrunner

import (
	"sync/atomic"
	"time"
)

// Stats are counts of the runner's ledger writer since the runner was
// made, for benchmarks and diagnosis.
type Stats struct {
	// LedgerBatches is how many ledger batches were written: one flush
	// (or transaction) of changelog records and one Pebble apply each.
	LedgerBatches int64
	// LedgerWrites is how many entries, fences and tombstones those
	// batches held.
	LedgerWrites int64
	// LedgerBusy is the time batches were being written, from the first
	// record sent to the Pebble apply, summed over batches (batches that
	// overlap count each).
	LedgerBusy time.Duration
	// LedgerAcked is the part of LedgerBusy spent waiting for the
	// batches' records to be acknowledged (or their transaction
	// committed); LedgerApplied the part spent applying them to Pebble.
	LedgerAcked, LedgerApplied time.Duration
}

// ledgerStats counts what the ledger writers did; it outlives a writer
// opened again after a failure.
type ledgerStats struct {
	batches, writes, busy, acked, applied atomic.Int64
}

// Stats returns the runner's ledger counts.
func (r *Runner) Stats() Stats {
	return Stats{LedgerBatches: r.stats.batches.Load(), LedgerWrites: r.stats.writes.Load(), LedgerBusy: time.Duration(r.stats.busy.Load()),
		LedgerAcked: time.Duration(r.stats.acked.Load()), LedgerApplied: time.Duration(r.stats.applied.Load())}
}
