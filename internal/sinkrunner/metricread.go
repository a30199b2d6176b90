package sinkrunner

// Reading values back out of Prometheus collectors, for the status snapshot
// built from the same metrics a scrape sees.

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// collect returns the metrics a collector holds.
func collect(c prometheus.Collector) []*dto.Metric {
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
