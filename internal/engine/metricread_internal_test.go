package engine

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricTotal(t *testing.T) {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"k"})
	v.WithLabelValues("a").Add(2)
	v.WithLabelValues("b").Add(3)
	if got := total(v); got != 5 {
		t.Errorf("total = %d, want 5", got)
	}
	if got := len(collect(v)); got != 2 {
		t.Errorf("collect gave %d series, want 2", got)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	g.Set(7)
	if got := total(g); got != 0 {
		t.Errorf("total of a gauge = %d, want 0 (counters only)", got)
	}
}
