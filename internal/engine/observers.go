package engine

// Commit observers: the parts of the replica that learn of each commit and
// abort (the stall watch, repeat detection, purging, transaction sizing,
// liveness, metrics), registered once per session, so that the driver
// commits and notifies instead of calling each of them by hand.

import (
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
)

// commitInfo is what a committed transaction (or at-least-once interval)
// tells its observers.
type commitInfo struct {
	offsets map[string]map[int32]int64 // the next offsets committed, by topic and partition
	tally   tally                      // what the transaction consumed, produced and rejected
	records int                        // input records in the transaction
	took    time.Duration              // how long the commit took
	age     time.Duration              // how long the transaction was open when it committed
}

// abortInfo is what a failed transaction tells its observers, before it
// is aborted (or its producer dropped) and the session rewound.
type abortInfo struct {
	step     string         // the step that failed ("commit", "produce", ...)
	err      error          // why
	state    kafka.TxnState // the producer's transaction state when it failed
	timedOut bool           // a call's deadline passed (the producer is dropped)
	age      time.Duration  // how long the transaction was open
}

// commitObserver learns of each commit and each abort, on the driver
// goroutine, in the order they happen.
type commitObserver interface {
	committed(c commitInfo)
	aborted(a abortInfo)
}

// observerFuncs adapts two functions (either may be nil) to commitObserver.
type observerFuncs struct {
	onCommit func(commitInfo)
	onAbort  func(abortInfo)
}

func (o observerFuncs) committed(c commitInfo) {
	if o.onCommit != nil {
		o.onCommit(c)
	}
}

func (o observerFuncs) aborted(a abortInfo) {
	if o.onAbort != nil {
		o.onAbort(a)
	}
}

// commitObservers lists what observes the commits of a session.
func (e *Engine) commitObservers() []commitObserver {
	return []commitObserver{
		// The stall watch and the health check (stall.go).
		observerFuncs{
			onCommit: func(c commitInfo) { e.commits.progress.committed(c.offsets) },
			onAbort:  func(abortInfo) { e.commits.progress.aborted() },
		},
		// Repeat detection forgets the partitions that moved on; whether a
		// failure stops the replica is decided by the driver (repeat.go).
		observerFuncs{onCommit: func(c commitInfo) { e.commits.repeats.committed(c.offsets) }},
		// Repartition topics are purged up to committed offsets (repartition.go).
		observerFuncs{onCommit: func(c commitInfo) { e.commits.purge.committed(c.offsets) }},
		commitCounter{m: e.m, rejected: e.output.rejected},
		// Status's last commit latency, and the slow commit warning (status.go).
		observerFuncs{onCommit: func(c commitInfo) {
			e.commits.live.committed(c.took)
			e.checkCommitLatency(c.took)
		}},
		// Transaction sizing (txnsize.go): a transactional commit's
		// pressure, or a step that timed out, shrinks transactions.
		observerFuncs{
			onCommit: func(c commitInfo) {
				if e.cfg.ExactlyOnce {
					e.sizeTransactions(e.commitPressure(c.took, c.age), c.took, c.age)
				}
			},
			onAbort: func(a abortInfo) {
				if a.timedOut {
					e.sizeTransactions(1, e.cfg.Timeouts.Commit, a.age)
				}
			},
		},
	}
}

// commitCounter counts commits and aborts in the metrics, with what a
// committed transaction consumed, produced and rejected.
type commitCounter struct {
	m        *metrics
	rejected string // the rejected topic, not counted as an output
}

func (k commitCounter) committed(c commitInfo) {
	k.m.committed.Inc()
	c.tally.count(k.m, k.rejected)
	k.m.commitLatency.Observe(c.took.Seconds())
	k.m.recordsPerTxn.Observe(float64(c.records))
}

func (k commitCounter) aborted(a abortInfo) {
	if a.timedOut {
		k.m.commitTimeouts.Inc()
	}
	k.m.commitFailures.add(a.state.String(), 1)
	k.m.aborted.Inc()
}

// notifyCommitted tells the session's observers of a commit.
func (d *driver) notifyCommitted(c commitInfo) {
	for _, o := range d.observers {
		o.committed(c)
	}
}

// notifyAborted tells the session's observers of a failed transaction.
func (d *driver) notifyAborted(a abortInfo) {
	for _, o := range d.observers {
		o.aborted(a)
	}
}
