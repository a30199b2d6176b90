package sinkrunner

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/kafka"
)

// Outbox topics keep their records forever (the engine creates them
// without retention): a delivery request must stay until the runner has
// settled it, however long the sink is down. The runner deletes them
// itself, below the offsets it committed (every delivery below is
// settled), at most once per purge interval per partition, as the engine
// purges repartition topics.

// DefaultPurgeInterval is how often, at most, the records of one outbox
// partition below the committed offset are deleted.
const DefaultPurgeInterval = 30 * time.Second

// deleter deletes the records of a topic's partitions below offsets
// (*kafka.Admin).
type deleter interface {
	DeleteRecords(topic string, before map[int32]int64) error
}

type topicPartition struct {
	topic     string
	partition int32
}

// purger deletes outbox records below committed offsets in the
// background, one purge at a time.
type purger struct {
	admin    deleter
	interval time.Duration
	now      func() time.Time
	log      hclog.Logger
	purges   *atomic.Int64 // counts purges that succeeded
	wg       sync.WaitGroup
	mu       struct {
		sync.Mutex
		pending map[topicPartition]int64     // next offsets committed, not purged yet
		last    map[topicPartition]time.Time // when each partition's last purge was due
		running bool
	}
}

func newPurger(admin deleter, interval time.Duration, now func() time.Time, log hclog.Logger, purges *atomic.Int64) *purger {
	p := &purger{admin: admin, interval: interval, now: now, log: log, purges: purges}
	p.mu.pending = map[topicPartition]int64{}
	p.mu.last = map[topicPartition]time.Time{}
	return p
}

// committed takes the offsets the runner has just committed and starts a
// purge of the partitions whose interval has passed. A partition's first
// purge comes one interval after its first commit.
func (p *purger) committed(offsets map[string]map[int32]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for t, parts := range offsets {
		for part, off := range parts {
			tp := topicPartition{t, part}
			p.mu.pending[tp] = max(p.mu.pending[tp], off)
			if _, ok := p.mu.last[tp]; !ok {
				p.mu.last[tp] = now
			}
		}
	}
	if p.mu.running {
		return
	}
	due := map[string]map[int32]int64{}
	for tp, off := range p.mu.pending {
		if now.Sub(p.mu.last[tp]) < p.interval {
			continue
		}
		if due[tp.topic] == nil {
			due[tp.topic] = map[int32]int64{}
		}
		due[tp.topic][tp.partition] = off
		delete(p.mu.pending, tp)
		p.mu.last[tp] = now
	}
	if len(due) == 0 {
		return
	}
	p.mu.running = true
	p.wg.Go(func() {
		failed := p.run(due)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.mu.running = false
		for t, parts := range failed {
			for part, off := range parts {
				tp := topicPartition{t, part}
				p.mu.pending[tp] = max(p.mu.pending[tp], off)
			}
		}
	})
}

// run deletes the records below the offsets given and returns those of
// the topics it could not purge (tried again at the next commit).
func (p *purger) run(due map[string]map[int32]int64) (failed map[string]map[int32]int64) {
	for _, t := range slices.Sorted(maps.Keys(due)) {
		if err := p.admin.DeleteRecords(t, due[t]); err != nil {
			p.log.Warn("cannot purge outbox topic; trying again later", "topic", t, "error", err)
			if failed == nil {
				failed = map[string]map[int32]int64{}
			}
			failed[t] = due[t]
			continue
		}
		p.purges.Add(1)
		p.log.Debug("purged outbox topic", "topic", t, "below", due[t])
	}
	return failed
}

// wait waits for the purge running, if any.
func (p *purger) wait() { p.wg.Wait() }

var _ deleter = (*kafka.Admin)(nil)
