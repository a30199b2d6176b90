package engine

import (
	"runtime"
	"strconv"

	"github.com/onceflow/onceflow/internal/version"
	"github.com/prometheus/client_golang/prometheus"
)

// collector exports a replica's metrics to Prometheus: it reads the
// struct when a scrape asks, so nothing is counted twice. Every metric's
// name, type, labels and help text are listed here, once.
type collector struct {
	exports    []export
	histograms []prometheus.Histogram
}

// export is one metric: its description and how to read its series.
type export struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	read func(emit func(v float64, labels ...string))
}

func newCollector(m *metrics, labels prometheus.Labels) *collector {
	c := &collector{histograms: []prometheus.Histogram{m.commitLatency, m.recordsPerTxn, m.rebalanceTime, m.restoreTime}}
	add := func(name, help string, kind prometheus.ValueType, read func(emit func(v float64, labels ...string)), vars ...string) {
		c.exports = append(c.exports, export{desc: prometheus.NewDesc(name, help, vars, labels), kind: kind, read: read})
	}
	count := func(name, help string, v *counter) {
		add(name, help, prometheus.CounterValue, func(emit func(float64, ...string)) { emit(float64(v.value())) })
	}
	countBy := func(name, help, label string, s *series[string]) {
		add(name, help, prometheus.CounterValue, func(emit func(float64, ...string)) {
			for k, v := range s.values() {
				emit(float64(v), k)
			}
		}, label)
	}
	gaugeOf := func(name, help string, g *gauge) {
		add(name, help, prometheus.GaugeValue, func(emit func(float64, ...string)) { emit(g.value()) })
	}

	countBy("onceflow_records_in_total", "Records consumed and processed, per task.", "task", &m.recordsIn)
	countBy("onceflow_records_out_total", "Records sent to output topics.", "topic", &m.recordsOut)
	countBy("onceflow_rejected_records_total", "Records written to the rejected-records topic, by reason.", "reason", &m.rejected)
	add("onceflow_transactions_total", "Transactions by outcome (committed, aborted).", prometheus.CounterValue, func(emit func(float64, ...string)) {
		emit(float64(m.committed.value()), "committed")
		emit(float64(m.aborted.value()), "aborted")
	}, "outcome")
	count("onceflow_producer_recreations_total", "Producers closed and created again (fenced, timed out, unknown commit outcome).", &m.recreations)
	count("onceflow_rebalances_total", "Group sessions started (one per generation joined).", &m.rebalances)
	gaugeOf("onceflow_assigned_partitions", "Input partitions this replica owns.", &m.assignedTasks)
	countBy("onceflow_commit_failures_total", "Failed transaction steps, by class (abortable, fatal, unknown, produce).", "class", &m.commitFailures)
	count("onceflow_restored_records_total", "Changelog records replayed into local state.", &m.restored)
	add("onceflow_state_changes_total", "State writes, by what became of them: sent to the changelog, or collapsed into a later write of the same key.", prometheus.CounterValue, func(emit func(float64, ...string)) {
		emit(float64(m.changesSent.value()), "sent")
		emit(float64(m.changesCollapsed.value()), "collapsed")
	}, "outcome")
	count("onceflow_clock_skewed_records_total", "Records stamped further ahead of the wall clock than the allowed skew (their stream time was held at the bound).", &m.skewed)
	count("onceflow_commit_timeouts_total", "Transaction steps that ran past the commit deadline (the producer was dropped and created again).", &m.commitTimeouts)
	gaugeOf("onceflow_stalled_partitions", "Assigned input partitions with input pending and no commit for longer than the stall timeout (a stalled restore counts one).", &m.stalled)
	gaugeOf("onceflow_oldest_pending_seconds", "Age of the oldest input received and not yet committed (0: none pending).", &m.oldestPending)
	count("onceflow_state_wipes_total", "Task stores wiped before a restore (the changelog no longer held their offset, or the state was older than the changelog's tombstone retention).", &m.wipes)
	count("onceflow_state_dropped_total", "Task stores deleted because the replica had not owned the task for the cleanup delay.", &m.dropped)
	count("onceflow_dedup_expired_total", "Dedup entries expired by stream time.", &m.expired)
	count("onceflow_repartition_purges_total", "Purges of repartition topics up to the committed offsets (one per topic and purge).", &m.purges)
	count("onceflow_restore_waits_total", "Restores that waited for a transaction open on their changelog partition to end.", &m.restoreWaits)
	gaugeOf("onceflow_transaction_timeout_seconds", "The transaction timeout: the broker aborts a transaction open for longer.", &m.txnTimeout)
	count("onceflow_slow_commits_total", "Commits that took more than half the transaction timeout (a warning is logged for each).", &m.slowCommits)
	add("onceflow_consumer_lag", "Offsets of an owned input partition not yet processed: its end offset as last fetched minus the offset after the last record processed. On an input written in transactions the commit marker after the last record counts 1 (onceflow lag counts records).", prometheus.GaugeValue, func(emit func(float64, ...string)) {
		for tp, v := range m.consumerLag.values() {
			emit(float64(v), tp.topic, strconv.Itoa(int(tp.partition)))
		}
	}, "topic", "partition")
	v, rev := version.Module()
	add("onceflow_build_info", "Always 1: onceflow's module version, the commit it was built from when known, and the Go version.", prometheus.GaugeValue, func(emit func(float64, ...string)) {
		emit(1, v, rev, runtime.Version())
	}, "version", "revision", "go_version")
	add("onceflow_state_bytes", "Bytes of one store of one task in the local state, measured every 30 s: its keys and values when its tables hold under 8 MiB, else Pebble's estimate of its table bytes.", prometheus.GaugeValue, func(emit func(float64, ...string)) {
		for st, v := range m.stateBytes.values() {
			emit(float64(v), st.store, st.task)
		}
	}, "store", "task")
	gaugeOf("onceflow_state_disk_bytes", "Bytes the local state's directory occupies on disk (allocated blocks, as du reports them): tables, write-ahead log, manifest.", &m.stateDisk)
	gaugeOf("onceflow_state_memtable_bytes", "Bytes the local state's memtables allocated (writes not yet flushed to its files).", &m.stateMemTable)
	gaugeOf("onceflow_transaction_records_limit", "Consumed records after which a transaction commits early, as in force: the configured value, or less while commits near their deadline.", &m.txnRecordsLimit)
	gaugeOf("onceflow_transaction_interval_seconds", "The commit interval in force: the configured value, or less while commits near their deadline.", &m.txnInterval)
	count("onceflow_transaction_shrinks_total", "Times transactions were made smaller (half the records and interval) because a commit neared its deadline.", &m.txnShrinks)
	count("onceflow_transaction_grows_total", "Times transactions were made larger again (twice the records and interval, up to the configured values) after healthy commits.", &m.txnGrows)
	count("onceflow_hanging_transactions_total", "Checks that found the replica's transactional id with a transaction open past the transaction timeout plus 30 s.", &m.hangingTxns)
	count("onceflow_hanging_transaction_recoveries_total", "Producers created again to abort a hanging transaction (at most 3 in a row).", &m.hangRecoveries)
	return c
}

// Describe sends the description of every metric of the replica.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, e := range c.exports {
		ch <- e.desc
	}
	for _, h := range c.histograms {
		h.Describe(ch)
	}
}

// Collect sends the replica's metrics as they are now.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.exports {
		e.read(func(v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(e.desc, e.kind, v, labels...)
		})
	}
	for _, h := range c.histograms {
		h.Collect(ch)
	}
}
