package engine

import (
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
	}
}

// total sums the counters a collector holds.
func total(c prometheus.Collector) int64 {
	ch := make(chan prometheus.Metric, 16)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var sum float64
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) == nil && pb.Counter != nil {
			sum += pb.Counter.GetValue()
		}
	}
	return int64(sum)
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
}

func newMetrics(reg prometheus.Registerer, app, instance string) (*metrics, error) {
	labels := prometheus.Labels{"app": app, "instance": instance}
	m := &metrics{
		recordsIn: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_records_in_total",
			Help: "Records consumed and processed, per task.", ConstLabels: labels}, []string{"task"}),
		recordsOut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_records_out_total",
			Help: "Records sent to output topics.", ConstLabels: labels}, []string{"topic"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_rejected_records_total",
			Help: "Records written to the rejected-records topic, by reason.", ConstLabels: labels}, []string{"reason"}),
		transactions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_transactions_total",
			Help: "Transactions by outcome (committed, aborted).", ConstLabels: labels}, []string{"outcome"}),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_commit_latency_seconds",
			Help: "Time to add offsets and commit a transaction.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		recordsPerTxn: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_records_per_transaction",
			Help: "Consumed records per committed transaction.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
		recreations: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_producer_recreations_total",
			Help: "Producers closed and created again (fenced, timed out, unknown commit outcome).", ConstLabels: labels}),
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_rebalances_total",
			Help: "Group sessions started (one per generation joined).", ConstLabels: labels}),
		rebalanceTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_rebalance_duration_seconds",
			Help: "Time from the end of one session to the start of the next.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
		assignedTasks: prometheus.NewGauge(prometheus.GaugeOpts{Name: "onceflow_assigned_partitions",
			Help: "Input partitions this replica owns.", ConstLabels: labels}),
		commitFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_commit_failures_total",
			Help: "Failed transaction steps, by class (abortable, fatal, unknown, produce).", ConstLabels: labels}, []string{"class"}),
		restored: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_restored_records_total",
			Help: "Changelog records replayed into local state.", ConstLabels: labels}),
		restoreTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "onceflow_restore_duration_seconds",
			Help: "Time to restore one store of one task.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		stateChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_state_changes_total",
			Help: "State writes, by what became of them: sent to the changelog, or collapsed into a later write of the same key.", ConstLabels: labels}, []string{"outcome"}),
		skewed: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_clock_skewed_records_total",
			Help: "Records stamped further ahead of the wall clock than the allowed skew (their stream time was held at the bound).", ConstLabels: labels}),
		commitTimeouts: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_commit_timeouts_total",
			Help: "Transaction steps that ran past the commit deadline (the producer was dropped and created again).", ConstLabels: labels}),
		stalled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "onceflow_stalled_partitions",
			Help: "Assigned input partitions with input pending and no commit for longer than the stall timeout (a stalled restore counts one).", ConstLabels: labels}),
		oldestPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "onceflow_oldest_pending_seconds",
			Help: "Age of the oldest input received and not yet committed (0: none pending).", ConstLabels: labels}),
		wipes: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_state_wipes_total",
			Help: "Task stores wiped before a restore (the changelog no longer held their offset, or the state was older than the changelog's tombstone retention).", ConstLabels: labels}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_state_dropped_total",
			Help: "Task stores deleted because the replica had not owned the task for the cleanup delay.", ConstLabels: labels}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_dedup_expired_total",
			Help: "Dedup entries expired by stream time.", ConstLabels: labels}),
		purges: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_repartition_purges_total",
			Help: "Purges of repartition topics up to the committed offsets (one per topic and purge).", ConstLabels: labels}),
		restoreWaits: prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_restore_waits_total",
			Help: "Restores that waited for a transaction open on their changelog partition to end.", ConstLabels: labels}),
	}
	// Series that exist at zero, so a rate or an alert sees them before
	// the first event.
	for _, o := range []string{"committed", "aborted"} {
		m.transactions.WithLabelValues(o)
	}
	for _, o := range []string{"sent", "collapsed"} {
		m.stateChanges.WithLabelValues(o)
	}
	for _, r := range []string{ReasonUndecodable, ReasonProcessingError, ReasonTooLarge, graph.ReasonDuplicate, graph.ReasonConflict, graph.ReasonStale} {
		m.rejected.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.recordsIn, m.recordsOut, m.rejected, m.transactions, m.commitLatency,
			m.recordsPerTxn, m.recreations, m.rebalances, m.rebalanceTime, m.assignedTasks, m.commitFailures, m.restored, m.restoreTime, m.stateChanges, m.skewed,
			m.commitTimeouts, m.stalled, m.oldestPending, m.wipes, m.dropped, m.expired, m.purges, m.restoreWaits} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
