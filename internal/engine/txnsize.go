package engine

// Transaction sizing: transactions shrink when their commits near a
// deadline and grow back, step by step, while commits are healthy.

import (
	"time"
)

// Transaction sizing bounds.
const (
	// shrinkAbove is the commit pressure above which transactions shrink.
	shrinkAbove = 0.5
	// healthyBelow is the commit pressure below which a commit is healthy.
	healthyBelow = 0.25
	// growAfter is the healthy commits in a row after which transactions
	// grow one step.
	growAfter = 20
	// shrinkSteps is how many halvings the sizes may go through: at the
	// smallest, a transaction is 1/16 of the configured records and
	// interval.
	shrinkSteps = 4
)

// txnSize is the effective size of a transaction: the commit interval and
// the records after which a transaction commits early. It starts at the
// configured values, halves on pressure and doubles back after healthy
// commits, never above the configured values. Only the driver goroutine
// (one at a time, one session after another) uses it.
type txnSize struct {
	maxRecords  int
	maxInterval time.Duration
	records     int
	interval    time.Duration
	step        int // halvings in force, 0 to shrinkSteps
	healthy     int // healthy commits in a row
}

func newTxnSize(records int, interval time.Duration) txnSize {
	return txnSize{maxRecords: records, maxInterval: interval, records: records, interval: interval}
}

// observe takes one commit's pressure (see commitPressure) and returns -1
// when the transactions shrank, +1 when they grew, 0 otherwise.
func (s *txnSize) observe(pressure float64) int {
	switch {
	case pressure > shrinkAbove:
		s.healthy = 0
		if s.step == shrinkSteps {
			return 0
		}
		s.step++
	case pressure < healthyBelow && s.step > 0:
		s.healthy++
		if s.healthy < growAfter {
			return 0
		}
		s.healthy = 0
		s.step--
	default:
		s.healthy = 0
		return 0
	}
	s.records = max(s.maxRecords>>s.step, min(s.maxRecords, 1))
	s.interval = max(s.maxInterval>>s.step, min(s.maxInterval, time.Millisecond))
	if pressure > shrinkAbove {
		return -1
	}
	return 1
}

// commitPressure is how close a commit came to a deadline, as a share of
// it (1: at the deadline): the larger of its latency over the commit
// timeout (past it the producer is dropped) and the transaction's age at
// the end of the commit over the transaction timeout (past it the broker
// aborts the transaction).
func (e *Engine) commitPressure(took, age time.Duration) float64 {
	t := e.cfg.Timeouts
	var p float64
	if t.Commit > 0 {
		p = float64(took) / float64(t.Commit)
	}
	if t.Transaction > 0 {
		p = max(p, float64(age)/float64(t.Transaction))
	}
	return p
}

// sizeTransactions adapts the transaction size to a commit's pressure,
// and counts, logs and exports a change.
func (e *Engine) sizeTransactions(pressure float64, took, age time.Duration) {
	s := &e.commits.size
	switch s.observe(pressure) {
	case -1:
		e.m.txnShrinks.Inc()
		e.log.Warn("shrinking transactions: commits near their deadline", "took", took.Round(time.Millisecond),
			"open_for", age.Round(time.Millisecond), "commit_timeout", e.cfg.Timeouts.Commit, "transaction_timeout", e.cfg.Timeouts.Transaction,
			"records", s.records, "interval", s.interval)
	case 1:
		e.m.txnGrows.Inc()
		e.log.Info("growing transactions back: commits healthy", "records", s.records, "interval", s.interval,
			"configured_records", s.maxRecords, "configured_interval", s.maxInterval)
	default:
		return
	}
	e.m.txnRecordsLimit.Set(float64(s.records))
	e.m.txnInterval.Set(s.interval.Seconds())
}
