package replicas

import (
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics are a replica's metric families by name, as read from its
// /metrics.
type Metrics map[string]*dto.MetricFamily

// Metrics reads the replica's /metrics. A paused replica does not answer:
// ctx bounds the read.
func (r *Replica) Metrics(ctx context.Context) (Metrics, error) {
	resp, err := r.get(ctx, "/metrics")
	if err != nil {
		return nil, fmt.Errorf("replicas: metrics of %s: %w", r.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("replicas: metrics of %s: %s", r.Name, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("replicas: metrics of %s: %w", r.Name, err)
	}
	return Metrics(families), nil
}

// Sum is the sum of the series of the counter or gauge name whose labels
// include every name=value pair of labels (given as name, value, ...).
func (m Metrics) Sum(name string, labels ...string) float64 {
	s := 0.0
	for _, v := range m[name].GetMetric() {
		if has(v, labels) {
			s += value(v)
		}
	}
	return s
}

// Max is the highest value among the series of name; 0 without any.
func (m Metrics) Max(name string) float64 {
	x := 0.0
	for _, v := range m[name].GetMetric() {
		x = max(x, value(v))
	}
	return x
}

func value(v *dto.Metric) float64 {
	return v.GetCounter().GetValue() + v.GetGauge().GetValue() + v.GetUntyped().GetValue()
}

func has(v *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range v.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
