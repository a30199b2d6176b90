// Package promread reads values back out of Prometheus collectors, for the
// snapshots (Stats, the status page) built from the same metrics a scrape
// sees.
package promread

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Collect returns the metrics a collector holds.
func Collect(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric, 16)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var out []*dto.Metric
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) == nil {
			out = append(out, &pb)
		}
	}
	return out
}

// Total sums the counters a collector holds.
func Total(c prometheus.Collector) int64 {
	var sum float64
	for _, m := range Collect(c) {
		if m.Counter != nil {
			sum += m.Counter.GetValue()
		}
	}
	return int64(sum)
}
