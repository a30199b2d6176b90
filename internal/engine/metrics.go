package engine

import (
	"runtime"
	"strconv"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/version"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

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

// snapshot reads Stats from the metrics: each event is counted once, in
// its metric, and Stats and /metrics agree.
func (m *metrics) snapshot() Stats {
	return Stats{
		RecordsIn:           total(m.recordsIn),
		RecordsOut:          total(m.recordsOut),
		Rejected:            total(m.rejected),
		Committed:           total(m.transactions.WithLabelValues("committed")),
		Aborted:             total(m.transactions.WithLabelValues("aborted")),
		ProducerRecreations: total(m.recreations),
		Sessions:            total(m.rebalances),
		Restored:            total(m.restored),
		Wipes:               total(m.wipes),
		Expired:             total(m.expired),
		ChangelogRecords:    total(m.stateChanges.WithLabelValues("sent")),
		ChangesCollapsed:    total(m.stateChanges.WithLabelValues("collapsed")),
		Purges:              total(m.purges),
		Dropped:             total(m.dropped),
		RestoreWaits:        total(m.restoreWaits),
		CommitTimeouts:      total(m.commitTimeouts),
		TransactionShrinks:  total(m.txnShrinks),
		TransactionGrows:    total(m.txnGrows),
		HangingTransactions: total(m.hangingTxns),
		HangRecoveries:      total(m.hangRecoveries),
	}
}

// metrics are the Prometheus collectors of one replica. Names are listed in
// the processor package doc.
type metrics struct {
	recordsIn      *prometheus.CounterVec
	recordsOut     *prometheus.CounterVec
	rejected       *prometheus.CounterVec
	transactions   *prometheus.CounterVec
	commitLatency  prometheus.Histogram
	recordsPerTxn  prometheus.Histogram
	recreations    prometheus.Counter
	rebalances     prometheus.Counter
	rebalanceTime  prometheus.Histogram
	assignedTasks  prometheus.Gauge
	commitFailures *prometheus.CounterVec
	restored       prometheus.Counter
	restoreTime    prometheus.Histogram
	stateChanges   *prometheus.CounterVec
	skewed         prometheus.Counter
	commitTimeouts prometheus.Counter
	stalled        prometheus.Gauge
	oldestPending  prometheus.Gauge
	wipes          prometheus.Counter
	dropped        prometheus.Counter
	expired        prometheus.Counter
	purges         prometheus.Counter
	restoreWaits   prometheus.Counter
	consumerLag    *prometheus.GaugeVec
	txnTimeout     prometheus.Gauge
	slowCommits    prometheus.Counter
	buildInfo      *prometheus.GaugeVec
	stateBytes     *prometheus.GaugeVec
	stateDisk      prometheus.Gauge
	stateMemTable  prometheus.Gauge

	txnRecordsLimit prometheus.Gauge
	txnInterval     prometheus.Gauge
	txnShrinks      prometheus.Counter
	txnGrows        prometheus.Counter
	hangingTxns     prometheus.Counter
	hangRecoveries  prometheus.Counter
}

// lag is the gauge of one input partition's lag.
func (m *metrics) lag(topic string, partition int32) prometheus.Gauge {
	return m.consumerLag.WithLabelValues(topic, strconv.Itoa(int(partition)))
}

// ownTasks creates the records-in series of a session's tasks, at zero
// for a task that has processed nothing yet.
func (m *metrics) ownTasks(g *graph.Graph, claims map[string][]int32) {
	for topic, parts := range claims {
		for _, p := range parts {
			m.recordsIn.WithLabelValues(taskName(g.SubTopologyOf(topic), p))
		}
	}
}

// dropLag removes the lag series of a partition the replica gave up.
func (m *metrics) dropLag(topic string, partition int32) {
	m.consumerLag.DeleteLabelValues(topic, strconv.Itoa(int(partition)))
}

func newMetrics(reg prometheus.Registerer, app, instance string) (*metrics, error) {
	labels := prometheus.Labels{"app": app, "instance": instance}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
	}
	counterVec := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, []string{label})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
	}
	m := &metrics{
		recordsIn:    counterVec("onceflow_records_in_total", "Records consumed and processed, per task.", "task"),
		recordsOut:   counterVec("onceflow_records_out_total", "Records sent to output topics.", "topic"),
		rejected:     counterVec("onceflow_rejected_records_total", "Records written to the rejected-records topic, by reason.", "reason"),
		transactions: counterVec("onceflow_transactions_total", "Transactions by outcome (committed, aborted).", "outcome"),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_commit_latency_seconds",
			Help: "Time to add offsets and commit a transaction.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		recordsPerTxn: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_records_per_transaction",
			Help: "Consumed records per committed transaction.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
		recreations: counter("onceflow_producer_recreations_total", "Producers closed and created again (fenced, timed out, unknown commit outcome)."),
		rebalances:  counter("onceflow_rebalances_total", "Group sessions started (one per generation joined)."),
		rebalanceTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_rebalance_duration_seconds",
			Help: "Time from the end of one session to the start of the next.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
		assignedTasks:  gauge("onceflow_assigned_partitions", "Input partitions this replica owns."),
		commitFailures: counterVec("onceflow_commit_failures_total", "Failed transaction steps, by class (abortable, fatal, unknown, produce).", "class"),
		restored:       counter("onceflow_restored_records_total", "Changelog records replayed into local state."),
		restoreTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_restore_duration_seconds",
			Help: "Time from the start of a session's restore to the end of one store of one task (stores and tasks restore concurrently).", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		stateChanges:   counterVec("onceflow_state_changes_total", "State writes, by what became of them: sent to the changelog, or collapsed into a later write of the same key.", "outcome"),
		skewed:         counter("onceflow_clock_skewed_records_total", "Records stamped further ahead of the wall clock than the allowed skew (their stream time was held at the bound)."),
		commitTimeouts: counter("onceflow_commit_timeouts_total", "Transaction steps that ran past the commit deadline (the producer was dropped and created again)."),
		stalled:        gauge("onceflow_stalled_partitions", "Assigned input partitions with input pending and no commit for longer than the stall timeout (a stalled restore counts one)."),
		oldestPending:  gauge("onceflow_oldest_pending_seconds", "Age of the oldest input received and not yet committed (0: none pending)."),
		wipes:          counter("onceflow_state_wipes_total", "Task stores wiped before a restore (the changelog no longer held their offset, or the state was older than the changelog's tombstone retention)."),
		dropped:        counter("onceflow_state_dropped_total", "Task stores deleted because the replica had not owned the task for the cleanup delay."),
		expired:        counter("onceflow_dedup_expired_total", "Dedup entries expired by stream time."),
		purges:         counter("onceflow_repartition_purges_total", "Purges of repartition topics up to the committed offsets (one per topic and purge)."),
		restoreWaits:   counter("onceflow_restore_waits_total", "Restores that waited for a transaction open on their changelog partition to end."),
		txnTimeout:     gauge("onceflow_transaction_timeout_seconds", "The transaction timeout: the broker aborts a transaction open for longer."),
		slowCommits:    counter("onceflow_slow_commits_total", "Commits that took more than half the transaction timeout (a warning is logged for each)."),
	}
	m.consumerLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "onceflow_consumer_lag",
		Help: "Offsets of an owned input partition not yet processed: its end offset as last fetched minus the offset after the last record processed. On an input written in transactions the commit marker after the last record counts 1 (onceflow lag counts records).", ConstLabels: labels}, []string{"topic", "partition"})
	m.buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "onceflow_build_info",
		Help: "Always 1: onceflow's module version, the commit it was built from when known, and the Go version.", ConstLabels: labels}, []string{"version", "revision", "go_version"})
	m.stateBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "onceflow_state_bytes",
		Help: "Bytes of one store of one task in the local state, measured every 30 s: its keys and values when its tables hold under 8 MiB, else Pebble's estimate of its table bytes.", ConstLabels: labels}, []string{"store", "task"})
	m.stateDisk = gauge("onceflow_state_disk_bytes", "Bytes the local state's directory occupies on disk (allocated blocks, as du reports them): tables, write-ahead log, manifest.")
	m.stateMemTable = gauge("onceflow_state_memtable_bytes", "Bytes the local state's memtables allocated (writes not yet flushed to its files).")
	m.txnRecordsLimit = gauge("onceflow_transaction_records_limit", "Consumed records after which a transaction commits early, as in force: the configured value, or less while commits near their deadline.")
	m.txnInterval = gauge("onceflow_transaction_interval_seconds", "The commit interval in force: the configured value, or less while commits near their deadline.")
	m.txnShrinks = counter("onceflow_transaction_shrinks_total", "Times transactions were made smaller (half the records and interval) because a commit neared its deadline.")
	m.txnGrows = counter("onceflow_transaction_grows_total", "Times transactions were made larger again (twice the records and interval, up to the configured values) after healthy commits.")
	m.hangingTxns = counter("onceflow_hanging_transactions_total", "Checks that found the replica's transactional id with a transaction open past the transaction timeout plus 30 s.")
	m.hangRecoveries = counter("onceflow_hanging_transaction_recoveries_total", "Producers created again to abort a hanging transaction (at most 3 in a row).")
	v, rev := version.Module()
	m.buildInfo.WithLabelValues(v, rev, runtime.Version()).Set(1)
	// Series that exist at zero, so a rate or an alert sees them before
	// the first event.
	for _, o := range []string{"committed", "aborted"} {
		m.transactions.WithLabelValues(o)
	}
	for _, c := range []string{"produce", kafka.TxnReady.String(), kafka.TxnOpen.String(), kafka.TxnAbortable.String(), kafka.TxnFatal.String(), kafka.TxnUnknown.String()} {
		m.commitFailures.WithLabelValues(c)
	}
	for _, o := range []string{"sent", "collapsed"} {
		m.stateChanges.WithLabelValues(o)
	}
	for _, r := range []string{wire.ReasonUndecodable, wire.ReasonProcessingError, wire.ReasonTooLarge, wire.ReasonDuplicate, wire.ReasonConflict, wire.ReasonStale} {
		m.rejected.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.recordsIn, m.recordsOut, m.rejected, m.transactions, m.commitLatency,
			m.recordsPerTxn, m.recreations, m.rebalances, m.rebalanceTime, m.assignedTasks, m.commitFailures, m.restored, m.restoreTime, m.stateChanges, m.skewed,
			m.commitTimeouts, m.stalled, m.oldestPending, m.wipes, m.dropped, m.expired, m.purges, m.restoreWaits, m.consumerLag, m.buildInfo, m.txnTimeout, m.slowCommits,
			m.stateBytes, m.stateDisk, m.stateMemTable, m.txnRecordsLimit, m.txnInterval, m.txnShrinks, m.txnGrows, m.hangingTxns, m.hangRecoveries} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
