package sinkrunner

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Delivery outcomes, the outcome label of onceflow_sink_deliveries_total.
const (
	OutcomeSucceeded    = "succeeded"
	OutcomeDeadLettered = "dead-lettered"
	OutcomeUnknown      = "unknown"
	OutcomeSkipped      = "skipped" // settled before (a replay)
)

type metrics struct {
	deliveries  *prometheus.CounterVec
	retries     *prometheus.CounterVec
	backlog     *prometheus.GaugeVec
	deadLetters *prometheus.CounterVec
	unknown     *prometheus.GaugeVec
	latency     *prometheus.HistogramVec
	// staleEntries counts ledger changelog entries a restore skipped as
	// written by a runner that had lost the partition (see Fold).
	staleEntries *prometheus.CounterVec
	purges       prometheus.Counter
	purged       atomic.Int64 // purges, for Runner.Purges
}

// newMetrics registers the runner's metrics with reg (nil: none), every
// series of every sink at zero.
func newMetrics(reg prometheus.Registerer, app, instance string, sinkNames []string) (*metrics, error) {
	labels := prometheus.Labels{"app": app, "instance": instance}
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_sink_deliveries_total",
			Help: "Deliveries settled, by sink and outcome (succeeded, dead-lettered, unknown, skipped).", ConstLabels: labels}, []string{"sink", "outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_sink_retries_total",
			Help: "Attempts that failed and were retried, by sink.", ConstLabels: labels}, []string{"sink"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "onceflow_sink_backlog",
			Help: "Deliveries read from the outbox and not settled yet, by sink.", ConstLabels: labels}, []string{"sink"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_sink_dead_letters_total",
			Help: "Deliveries written to the dead-letter topic, by sink.", ConstLabels: labels}, []string{"sink"}),
		unknown: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "onceflow_sink_unknown",
			Help: "Deliveries parked with an unknown outcome in the ledgers of the partitions this runner owns, by sink.", ConstLabels: labels}, []string{"sink"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "onceflow_sink_delivery_seconds",
			Help:    "Time of one attempt, by sink.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), ConstLabels: labels}, []string{"sink"}),
		staleEntries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceflow_sink_ledger_stale_entries_total",
			Help: "Ledger entries a restore skipped: written by a runner that had lost the partition, after the new owner's fence, by sink.", ConstLabels: labels}, []string{"sink"}),
	}
	m.purges = countingCounter{prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_sink_outbox_purges_total",
		Help: "Outbox purges: records below the committed offsets deleted (one per topic).", ConstLabels: labels}), &m.purged}
	for _, s := range sinkNames {
		for _, o := range []string{OutcomeSucceeded, OutcomeDeadLettered, OutcomeUnknown, OutcomeSkipped} {
			m.deliveries.WithLabelValues(s, o)
		}
		m.retries.WithLabelValues(s)
		m.backlog.WithLabelValues(s)
		m.deadLetters.WithLabelValues(s)
		m.unknown.WithLabelValues(s)
		m.latency.WithLabelValues(s)
		m.staleEntries.WithLabelValues(s)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.deliveries, m.retries, m.backlog, m.deadLetters, m.unknown, m.latency, m.staleEntries, m.purges} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// countingCounter is a counter that also counts in n (read without a
// registry).
type countingCounter struct {
	prometheus.Counter
	n *atomic.Int64
}

func (c countingCounter) Inc() {
	c.Counter.Inc()
	c.n.Add(1)
}
