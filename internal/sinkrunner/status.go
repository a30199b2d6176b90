package sinkrunner

import (
	"maps"
	"slices"

	dto "github.com/prometheus/client_model/go"
)

// SinkStatus is one sink's delivery counts, as its metrics hold them.
type SinkStatus struct {
	Sink string
	// Outcomes counts settled deliveries by outcome (OutcomeSucceeded, ...).
	Outcomes map[string]int64
	// Backlog is the deliveries read and not settled; Unknown those parked
	// with an unknown outcome in the owned partitions' ledgers.
	Backlog, Unknown int64
	Retries          int64
	DeadLetters      int64
}

// Status returns the delivery counts of every sink, sorted by name (none
// when the topology has no sinks).
func (r *Runner) Status() []SinkStatus {
	by := map[string]*SinkStatus{}
	get := func(m *dto.Metric) *SinkStatus {
		name := labelOf(m, "sink")
		s, ok := by[name]
		if !ok {
			s = &SinkStatus{Sink: name, Outcomes: map[string]int64{}}
			by[name] = s
		}
		return s
	}
	for _, m := range collect(r.m.deliveries) {
		get(m).Outcomes[labelOf(m, "outcome")] = int64(m.GetCounter().GetValue())
	}
	for _, m := range collect(r.m.backlog) {
		get(m).Backlog = int64(m.GetGauge().GetValue())
	}
	for _, m := range collect(r.m.unknown) {
		get(m).Unknown = int64(m.GetGauge().GetValue())
	}
	for _, m := range collect(r.m.retries) {
		get(m).Retries = int64(m.GetCounter().GetValue())
	}
	for _, m := range collect(r.m.deadLetters) {
		get(m).DeadLetters = int64(m.GetCounter().GetValue())
	}
	var out []SinkStatus
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, *by[name])
	}
	return out
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
