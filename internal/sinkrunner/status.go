package sinkrunner

import (
	"maps"
	"slices"
)

// SinkStatus is one sink's delivery counts.
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
	var out []SinkStatus
	for _, name := range slices.Sorted(maps.Keys(r.m.sinks)) {
		s := r.m.sinks[name]
		out = append(out, SinkStatus{Sink: name, Outcomes: s.outcomes(), Backlog: s.backlog.Load(), Unknown: s.unknown.Load(),
			Retries: s.retries.Load(), DeadLetters: s.deadLetters.Load()})
	}
	return out
}
