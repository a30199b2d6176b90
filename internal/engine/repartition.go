package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
)

// Repartition topics hand records from one sub-topology to the next. A
// record in one must stay until the reading sub-topology has committed
// past it, however far behind that one is: the topics keep records forever
// (no time or size retention) and the engine deletes them itself, up to
// the committed offsets, as Kafka Streams does.

// repartitionSegmentBytes is the segment size of repartition topics (Kafka
// Streams' choice): purged records free their disk space a segment at a
// time, so segments are kept smaller than the broker's default 1 GiB.
const repartitionSegmentBytes = "52428800"

// repartitionConfigs are the configs a repartition topic is created with.
func repartitionConfigs() map[string]*string {
	del, segment := "delete", repartitionSegmentBytes
	configs := kafka.KeepForeverConfigs()
	configs["cleanup.policy"], configs["segment.bytes"] = &del, &segment
	return configs
}

// keepForever removes the time and size retention of a topic whose
// records exist nowhere else (a repartition, outbox, dead-letter or
// rejected topic created by an earlier release, or by hand, with the
// broker's defaults). A retention it cannot remove stops the replica with
// an error that says what to run; one it cannot read is a warning.
func (e *Engine) keepForever(admin *kafka.Admin, kind, topic string) error {
	replaced, err := admin.KeepForever(topic)
	switch {
	case errors.Is(err, kafka.ErrRetentionUnknown):
		e.log.Warn("cannot read the topic's retention; records that exist nowhere else may be deleted unless retention.ms and retention.bytes are -1",
			"kind", kind, "topic", topic, "error", err)
		return nil
	case err != nil:
		return fmt.Errorf("engine: %s topic: %w", kind, err)
	case len(replaced) > 0:
		e.log.Info("topic now keeps its records until they are handled", "kind", kind, "topic", topic, "replaced", replaced)
	}
	return nil
}

// checkInternalOffsets refuses a session in which a claimed repartition
// partition's committed offset lies outside the records it holds. sarama
// would silently start such a partition from its oldest record, skipping
// every record deleted in between.
func (e *Engine) checkInternalOffsets(claims map[string][]int32) error {
	internal := map[string][]int32{}
	for _, t := range e.g.InternalTopics() {
		if ps := claims[t]; len(ps) > 0 {
			internal[t] = ps
		}
	}
	err := e.conn.admin.CheckCommitted(e.cfg.AppID, internal)
	if errors.Is(err, kafka.ErrInternalOffsetOutOfRange) {
		e.log.Error("records of a repartition topic were deleted before they were processed; stopping (the records are lost: reprocess the input, or reset the group's offsets on the topic to go on without them)", "error", err)
	}
	return err
}

// purger deletes the records of repartition topics below the offsets the
// group committed, at most once per interval (Kafka Streams'
// repartition.purge.interval.ms), in the background.
type purger struct {
	e      *Engine
	topics []string // the repartition topics
	wg     sync.WaitGroup
	mu     struct {
		sync.Mutex
		pending map[string]map[int32]int64 // next offsets committed since the last purge
		last    time.Time                  // when the last purge started
		running bool
	}
}

// committed takes the offsets of a transaction (or an at-least-once
// commit) that has just committed, and starts a purge when one is due.
func (p *purger) committed(offsets map[string]map[int32]int64) {
	e := p.e
	if len(p.topics) == 0 {
		return
	}
	internal := map[string]map[int32]int64{}
	for _, t := range p.topics {
		if len(offsets[t]) > 0 {
			internal[t] = offsets[t]
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addLocked(internal)
	now := e.cfg.Now()
	if p.mu.last.IsZero() {
		p.mu.last = now // the first purge one interval after the first commit
	}
	if p.mu.running || len(p.mu.pending) == 0 || now.Sub(p.mu.last) < e.cfg.PurgeInterval {
		return
	}
	batch := p.mu.pending
	p.mu.pending = nil
	p.mu.last = now
	p.mu.running = true
	p.wg.Go(func() {
		failed := p.run(batch)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.mu.running = false
		p.addLocked(failed)
	})
}

// addLocked merges offsets into the pending ones, keeping the larger.
func (p *purger) addLocked(offsets map[string]map[int32]int64) {
	for t, parts := range offsets {
		for part, off := range parts {
			if p.mu.pending == nil {
				p.mu.pending = map[string]map[int32]int64{}
			}
			if p.mu.pending[t] == nil {
				p.mu.pending[t] = map[int32]int64{}
			}
			p.mu.pending[t][part] = max(p.mu.pending[t][part], off)
		}
	}
}

// run deletes the records below the offsets given and returns those of the
// topics it could not purge.
func (p *purger) run(batch map[string]map[int32]int64) (failed map[string]map[int32]int64) {
	e := p.e
	for _, t := range slices.Sorted(maps.Keys(batch)) {
		if err := e.conn.admin.DeleteRecords(t, batch[t]); err != nil {
			e.log.Warn("cannot purge repartition topic; trying again at the next purge", "topic", t, "error", err)
			if failed == nil {
				failed = map[string]map[int32]int64{}
			}
			failed[t] = batch[t]
			continue
		}
		e.m.purges.Inc()
		e.log.Debug("purged repartition topic", "topic", t, "below", batch[t])
	}
	return failed
}

// wait waits for a purge under way.
func (p *purger) wait() { p.wg.Wait() }
