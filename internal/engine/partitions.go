package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/onceflow/onceflow/internal/kafka"
)

// growChangelog gives a changelog with fewer partitions than its
// sub-topology's inputs the partitions it lacks (they start empty, as the
// new tasks' state does), so the tasks of added input partitions can write
// their state instead of failing every transaction. It returns the
// changelog's partition count. A changelog with more partitions than its
// inputs is an error: the input topic was recreated smaller and the state
// belongs to another layout.
func (e *Engine) growChangelog(admin *kafka.Admin, topic string, have, want int32) (int32, error) {
	switch {
	case have == want:
		return have, nil
	case have > want:
		return 0, fmt.Errorf("engine: changelog %q has %d partitions, its sub-topology %d: the input topic was recreated with fewer partitions; delete the changelog (and the local state) to start the state afresh, or restore the input's partition count", topic, have, want)
	}
	e.log.Warn("input partitions were added; adding them to the changelog (state stays with the partition that wrote it: keys that now hash to another partition start with no state there)",
		"changelog", topic, "partitions", have, "inputs", want)
	if err := admin.GrowPartitions(topic, want); err != nil {
		return 0, fmt.Errorf("engine: changelog %q has %d partitions, its inputs %d, and cannot grow: %w; add the partitions by hand (kafka-topics --alter --partitions %d)", topic, have, want, err, want)
	}
	return want, nil
}

// growChangelogsFor grows, at the start of a session, the changelogs of
// claimed tasks whose partition the changelog does not have yet: input
// partitions added while the replica runs reach it through a rebalance.
// The producer is then created again: its metadata does not know the new
// partitions, and it refuses to write to them.
func (e *Engine) growChangelogsFor(ctx context.Context, claims map[string][]int32) error {
	need := map[string]int32{}
	for topic, parts := range claims {
		sub := e.g.SubTopologyOf(topic)
		for _, s := range e.restorer.stores {
			if s.sub != sub {
				continue
			}
			for _, p := range parts {
				if p >= e.restorer.changelogParts[s.topic] {
					need[s.topic] = max(need[s.topic], p+1)
				}
			}
		}
	}
	if len(need) == 0 {
		return nil
	}
	admin, err := kafka.Connect(ctx, e.cfg.Client)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	defer admin.Close()
	have, err := admin.Partitions(slices.Sorted(maps.Keys(need))...)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	for _, t := range slices.Sorted(maps.Keys(need)) {
		n, err := e.growChangelog(admin, t, have[t], max(have[t], need[t]))
		if err != nil {
			return err
		}
		e.restorer.changelogParts[t] = n
	}
	if e.conn.producer != nil {
		if err := e.conn.producer.Close(); err != nil {
			e.log.Warn("close producer", "error", err)
		}
		e.conn.producer = nil
	}
	p, err := e.newProducer(ctx)
	if err != nil {
		return err
	}
	e.conn.producer = p
	return nil
}
