package sinkrunner

import (
	"maps"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The runner counts in a plain struct (metrics) that Status reads, and one
// collector exports that struct to Prometheus when a scrape asks: a count
// is kept once, and Status and /metrics agree.

// Delivery outcomes, the outcome label of onceflow_sink_deliveries_total.
const (
	OutcomeSucceeded    = "succeeded"
	OutcomeDeadLettered = "dead-lettered"
	OutcomeUnknown      = "unknown"
	OutcomeSkipped      = "skipped" // settled before (a replay)
)

// metrics are the runner's counts: one sinkCounts per sink, fixed when the
// runner is made, and the outbox purges.
type metrics struct {
	sinks  map[string]*sinkCounts // by sink name; read-only after newMetrics
	purges atomic.Int64           // outbox purges that succeeded
	// latency times attempts; a histogram, kept by Prometheus.
	latency *prometheus.HistogramVec
}

// sinkCounts are one sink's counts.
type sinkCounts struct {
	// Deliveries settled, by outcome.
	succeeded, deadLettered, unknownOutcome, skipped atomic.Int64
	retries                                          atomic.Int64 // attempts that failed and were retried
	// deadLetters counts deliveries written to the dead-letter topic.
	deadLetters atomic.Int64
	// staleEntries counts ledger changelog entries a restore skipped as
	// written by a runner that had lost the partition (see Fold).
	staleEntries atomic.Int64
	backlog      atomic.Int64 // deliveries read from the outbox and not settled yet
	unknown      atomic.Int64 // deliveries parked with an unknown outcome in the owned partitions' ledgers
}

// outcomes reads the deliveries settled, by outcome.
func (s *sinkCounts) outcomes() map[string]int64 {
	return map[string]int64{OutcomeSucceeded: s.succeeded.Load(), OutcomeDeadLettered: s.deadLettered.Load(),
		OutcomeUnknown: s.unknownOutcome.Load(), OutcomeSkipped: s.skipped.Load()}
}

// sink returns the counts of the sink named name (one of the runner's).
func (m *metrics) sink(name string) *sinkCounts { return m.sinks[name] }

// newMetrics makes the counts of the named sinks and registers their
// collector with reg (nil: none), every series of every sink at zero.
func newMetrics(reg prometheus.Registerer, app, instance string, sinkNames []string) (*metrics, error) {
	labels := prometheus.Labels{"app": app, "instance": instance}
	m := &metrics{sinks: map[string]*sinkCounts{},
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "onceflow_sink_delivery_seconds",
			Help:    "Time of one attempt, by sink.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), ConstLabels: labels}, []string{"sink"}),
	}
	for _, s := range sinkNames {
		m.sinks[s] = &sinkCounts{}
		m.latency.WithLabelValues(s)
	}
	if reg == nil {
		return m, nil
	}
	if err := reg.Register(newCollector(m, labels)); err != nil {
		return nil, err
	}
	return m, nil
}

// collector exports a runner's metrics to Prometheus. The names are listed
// in the processor package doc.
type collector struct {
	m                                                  *metrics
	deliveries, retries, backlog, deadLetters, unknown *prometheus.Desc
	staleEntries, purges                               *prometheus.Desc
}

func newCollector(m *metrics, labels prometheus.Labels) *collector {
	desc := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, vars, labels)
	}
	return &collector{m: m,
		deliveries:   desc("onceflow_sink_deliveries_total", "Deliveries settled, by sink and outcome (succeeded, dead-lettered, unknown, skipped).", "sink", "outcome"),
		retries:      desc("onceflow_sink_retries_total", "Attempts that failed and were retried, by sink.", "sink"),
		backlog:      desc("onceflow_sink_backlog", "Deliveries read from the outbox and not settled yet, by sink.", "sink"),
		deadLetters:  desc("onceflow_sink_dead_letters_total", "Deliveries written to the dead-letter topic, by sink.", "sink"),
		unknown:      desc("onceflow_sink_unknown", "Deliveries parked with an unknown outcome in the ledgers of the partitions this runner owns, by sink.", "sink"),
		staleEntries: desc("onceflow_sink_ledger_stale_entries_total", "Ledger entries a restore skipped: written by a runner that had lost the partition, after the new owner's fence, by sink.", "sink"),
		purges:       desc("onceflow_sink_outbox_purges_total", "Outbox purges: records below the committed offsets deleted (one per topic)."),
	}
}

// Describe sends the descriptions of every metric of the runner.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.deliveries, c.retries, c.backlog, c.deadLetters, c.unknown, c.staleEntries, c.purges} {
		ch <- d
	}
	c.m.latency.Describe(ch)
}

// Collect sends the runner's counts as they are now.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, name := range slices.Sorted(maps.Keys(c.m.sinks)) {
		s := c.m.sinks[name]
		for o, n := range s.outcomes() {
			counter(c.deliveries, n, name, o)
		}
		counter(c.retries, s.retries.Load(), name)
		gauge(c.backlog, s.backlog.Load(), name)
		counter(c.deadLetters, s.deadLetters.Load(), name)
		gauge(c.unknown, s.unknown.Load(), name)
		counter(c.staleEntries, s.staleEntries.Load(), name)
	}
	counter(c.purges, c.m.purges.Load())
	c.m.latency.Collect(ch)
}
