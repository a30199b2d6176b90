package engine

import (
	"fmt"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
)

// Outbox topics hold the delivery requests of external sinks
// (topology.ToSink) until the sink runner has settled them. Like
// repartition topics they keep records forever (the runner deletes them
// below its committed offsets); each has a dead-letter topic with as many
// partitions, which keeps its records forever too: a dead letter exists
// nowhere else once the outbox is purged.

// prepareOutboxes creates the outbox topics among want (the output topics
// and their partition counts) and their dead-letter topics, all with
// unlimited retention.
func (e *Engine) prepareOutboxes(admin *kafka.Admin, want map[string]int32) error {
	for _, t := range e.g.OutboxTopics() {
		n, ok := want[t]
		if !ok {
			continue
		}
		got, err := admin.Ensure(map[string]int32{t: n}, repartitionConfigs())
		if err != nil {
			return fmt.Errorf("engine: outbox topic: %w", err)
		}
		if err := e.keepForever(admin, "outbox", t); err != nil {
			return err
		}
		dlq := graph.DLQTopic(t)
		if _, err := admin.Ensure(map[string]int32{dlq: got[t]}, kafka.KeepForeverConfigs()); err != nil {
			return fmt.Errorf("engine: dead-letter topic: %w", err)
		}
		if err := e.keepForever(admin, "dead-letter", dlq); err != nil {
			return err
		}
	}
	return nil
}
