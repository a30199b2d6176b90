package promread

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestTotal(t *testing.T) {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"k"})
	v.WithLabelValues("a").Add(2)
	v.WithLabelValues("b").Add(3)
	if got := Total(v); got != 5 {
		t.Errorf("Total = %d, want 5", got)
	}
	if got := len(Collect(v)); got != 2 {
		t.Errorf("Collect gave %d series, want 2", got)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	g.Set(7)
	if got := Total(g); got != 0 {
		t.Errorf("Total of a gauge = %d, want 0 (counters only)", got)
	}
}
