package engine

import (
	"maps"
	"math"
	"sync"
	"sync/atomic"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// A replica counts in a plain struct (metrics) that Stats and Status read,
// and one collector (collector.go) exports that struct to Prometheus when
// a scrape asks: each event is counted once, and Stats, Status and
// /metrics agree.

// Stats is a snapshot of a replica's counters since it started.
type Stats struct {
	RecordsIn           int64 // consumed records processed, counted when their transaction commits
	RecordsOut          int64 // records sent to output topics
	Rejected            int64 // records sent to the rejected-records topic
	Committed           int64 // transactions (or at-least-once commits) that succeeded
	Aborted             int64 // transactions aborted (each followed by a rewind)
	ProducerRecreations int64 // producers closed and created again after fencing or an unknown outcome
	Sessions            int64 // group sessions (generations) this replica took part in
	Restored            int64 // changelog records replayed into local state
	Wipes               int64 // task stores wiped before a restore: the changelog no longer held their offset, or the state was older than its tombstone retention
	Expired             int64 // dedup entries expired by event time
	ChangelogRecords    int64 // state changes sent to changelogs
	ChangesCollapsed    int64 // state changes not sent: a later write of the same key in the same chunk replaced them
	Purges              int64 // repartition topics purged up to the committed offsets (one per topic and purge)
	Dropped             int64 // task stores deleted because the replica had not owned the task for the cleanup delay
	RestoreWaits        int64 // restores that waited for a transaction open on their changelog partition to end
	CommitTimeouts      int64 // transaction steps that ran past the commit timeout (each dropped the producer)
	TransactionShrinks  int64 // times transactions were made smaller: a commit neared its deadline
	TransactionGrows    int64 // times transactions were made larger again after healthy commits
	HangingTransactions int64 // checks that found the transactional id's transaction hanging
	HangRecoveries      int64 // producers created again to abort a hanging transaction
}

// snapshot reads Stats from the metrics.
func (m *metrics) snapshot() Stats {
	return Stats{
		RecordsIn:           sum(m.recordsIn.values()),
		RecordsOut:          sum(m.recordsOut.values()),
		Rejected:            sum(m.rejected.values()),
		Committed:           m.committed.value(),
		Aborted:             m.aborted.value(),
		ProducerRecreations: m.recreations.value(),
		Sessions:            m.rebalances.value(),
		Restored:            m.restored.value(),
		Wipes:               m.wipes.value(),
		Expired:             m.expired.value(),
		ChangelogRecords:    m.changesSent.value(),
		ChangesCollapsed:    m.changesCollapsed.value(),
		Purges:              m.purges.value(),
		Dropped:             m.dropped.value(),
		RestoreWaits:        m.restoreWaits.value(),
		CommitTimeouts:      m.commitTimeouts.value(),
		TransactionShrinks:  m.txnShrinks.value(),
		TransactionGrows:    m.txnGrows.value(),
		HangingTransactions: m.hangingTxns.value(),
		HangRecoveries:      m.hangRecoveries.value(),
	}
}

// metrics are the counts and gauges of one replica; their names on
// /metrics are listed in the processor package doc. The time
// distributions are Prometheus histograms, which the collector forwards.
type metrics struct {
	recordsIn        series[string] // records consumed, by task
	recordsOut       series[string] // records produced, by output topic
	rejected         series[string] // records rejected, by reason
	committed        counter        // transactions committed
	aborted          counter        // transactions aborted
	commitFailures   series[string] // failed transaction steps, by class
	recreations      counter
	rebalances       counter
	restored         counter
	changesSent      counter // state changes sent to changelogs
	changesCollapsed counter // state changes replaced by a later write in the same chunk
	skewed           counter
	commitTimeouts   counter
	wipes            counter
	dropped          counter
	expired          counter
	purges           counter
	restoreWaits     counter
	slowCommits      counter
	txnShrinks       counter
	txnGrows         counter
	hangingTxns      counter
	hangRecoveries   counter

	assignedTasks   gauge
	stalled         gauge
	oldestPending   gauge // seconds
	txnTimeout      gauge // seconds
	txnRecordsLimit gauge
	txnInterval     gauge                  // seconds
	consumerLag     series[topicPartition] // offsets not yet processed, by input partition
	stateBytes      series[storeTaskName]  // bytes of one store of one task
	stateDisk       gauge
	stateMemTable   gauge

	commitLatency prometheus.Histogram
	recordsPerTxn prometheus.Histogram
	rebalanceTime prometheus.Histogram
	restoreTime   prometheus.Histogram
}

// storeTaskName labels the size of one store of one task.
type storeTaskName struct{ store, task string }

// counter is a count that only grows.
type counter struct{ n atomic.Int64 }

func (c *counter) Inc()         { c.n.Add(1) }
func (c *counter) Add(n int64)  { c.n.Add(n) }
func (c *counter) value() int64 { return c.n.Load() }

// gauge is a value that is set.
type gauge struct{ bits atomic.Uint64 }

func (g *gauge) Set(v float64)  { g.bits.Store(math.Float64bits(v)) }
func (g *gauge) value() float64 { return math.Float64frombits(g.bits.Load()) }

// series holds one value per label set: a labeled count (add) or gauge
// (set, drop). The zero value is ready.
type series[K comparable] struct {
	mu struct {
		sync.Mutex
		v map[K]int64
	}
}

// add adds n to the value of k, creating it (at zero when n is 0).
func (s *series[K]) add(k K, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.v == nil {
		s.mu.v = map[K]int64{}
	}
	s.mu.v[k] += n
}

// set sets the value of k.
func (s *series[K]) set(k K, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.v == nil {
		s.mu.v = map[K]int64{}
	}
	s.mu.v[k] = n
}

// drop removes k.
func (s *series[K]) drop(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.v, k)
}

// values copies every label set's value.
func (s *series[K]) values() map[K]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.mu.v)
}

func sum[K comparable](v map[K]int64) int64 {
	var n int64
	for _, x := range v {
		n += x
	}
	return n
}

// setLag notes one input partition's lag.
func (m *metrics) setLag(topic string, partition int32, lag int64) {
	m.consumerLag.set(topicPartition{topic, partition}, lag)
}

// ownTasks creates the records-in series of a session's tasks, at zero
// for a task that has processed nothing yet.
func (m *metrics) ownTasks(g *graph.Graph, claims map[string][]int32) {
	for topic, parts := range claims {
		for _, p := range parts {
			m.recordsIn.add(taskName(g.SubTopologyOf(topic), p), 0)
		}
	}
}

// dropLag removes the lag series of a partition the replica gave up.
func (m *metrics) dropLag(topic string, partition int32) {
	m.consumerLag.drop(topicPartition{topic, partition})
}

// newMetrics makes the metrics of a replica and registers their collector
// with reg (nil: none).
func newMetrics(reg prometheus.Registerer, app, instance string) (*metrics, error) {
	labels := prometheus.Labels{"app": app, "instance": instance}
	m := &metrics{
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_commit_latency_seconds",
			Help: "Time to add offsets and commit a transaction.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		recordsPerTxn: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_records_per_transaction",
			Help: "Consumed records per committed transaction.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
		rebalanceTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_rebalance_duration_seconds",
			Help: "Time from the end of one session to the start of the next.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
		restoreTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_restore_duration_seconds",
			Help: "Time from the start of a session's restore to the end of one store of one task (stores and tasks restore concurrently).", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
	}
	// Series that exist at zero, so a rate or an alert sees them before
	// the first event.
	for _, c := range []string{"produce", kafka.TxnReady.String(), kafka.TxnOpen.String(), kafka.TxnAbortable.String(), kafka.TxnFatal.String(), kafka.TxnUnknown.String()} {
		m.commitFailures.add(c, 0)
	}
	for _, r := range []string{wire.ReasonUndecodable, wire.ReasonProcessingError, wire.ReasonTooLarge, wire.ReasonDuplicate, wire.ReasonConflict, wire.ReasonStale} {
		m.rejected.add(r, 0)
	}
	if reg != nil {
		if err := reg.Register(newCollector(m, labels)); err != nil {
			return nil, err
		}
	}
	return m, nil
}
