// Package franz is the benchmark's franz-go peer: the exactly-once copy
// loop of franz-go's GroupTransactSession, with the same commit cadence as
// onceflow (one transaction per commit interval, not one per poll).
//
// Each transaction begins, polls and produces (same partition, key, value,
// headers and timestamp) until the interval is over, then ends with
// TryCommit: the session flushes, adds the consumed offsets with the
// member's generation (KIP-447) and commits, or aborts when the group
// rebalanced or a record failed, and then rewinds to the committed offsets
// itself.
package franz

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures one member.
type Config struct {
	Brokers        []string
	Group          string // the consumer group; the transactional id is Group-InstanceID
	InstanceID     string // unique among live members
	Input, Output  string
	CommitInterval time.Duration // default 100 ms
}

// Stats are the loop's counters.
type Stats struct {
	Records         int64
	Transactions    int64
	Aborts          int64
	CommitLatencies []time.Duration // time of each End
}

// Copier is one member of the copy loop.
type Copier struct {
	cfg                   Config
	records, txns, aborts atomic.Int64
	mu                    sync.Mutex
	latencies             []time.Duration
}

// New checks cfg; it does no I/O.
func New(cfg Config) (*Copier, error) {
	if len(cfg.Brokers) == 0 || cfg.Group == "" || cfg.InstanceID == "" || cfg.Input == "" || cfg.Output == "" {
		return nil, errors.New("franz peer: brokers, group, instance id, input and output are required")
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = 100 * time.Millisecond
	}
	return &Copier{cfg: cfg}, nil
}

// Stats returns a snapshot of the counters.
func (c *Copier) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Records: c.records.Load(), Transactions: c.txns.Load(), Aborts: c.aborts.Load(),
		CommitLatencies: append([]time.Duration(nil), c.latencies...)}
}

// Run copies until ctx ends, then commits the open transaction, leaves the
// group and returns nil.
func (c *Copier) Run(ctx context.Context) error {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.ClientID("franz-peer-"+c.cfg.InstanceID),
		kgo.TransactionalID(c.cfg.Group+"-"+c.cfg.InstanceID),
		kgo.TransactionTimeout(8*time.Second),
		kgo.ConsumerGroup(c.cfg.Group),
		kgo.ConsumeTopics(c.cfg.Input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(10*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.DefaultProduceTopic(c.cfg.Output),
	)
	if err != nil {
		return fmt.Errorf("franz peer: %w", err)
	}
	defer sess.Close()

	for {
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("franz peer: begin: %w", err)
		}
		deadline := time.Now().Add(c.cfg.CommitInterval)
		var n int64
		for ctx.Err() == nil && time.Now().Before(deadline) {
			pctx, cancel := context.WithDeadline(ctx, deadline)
			fetches := sess.PollFetches(pctx)
			cancel()
			fetches.EachRecord(func(r *kgo.Record) {
				n++
				sess.Produce(ctx, &kgo.Record{Partition: r.Partition, Key: r.Key, Value: r.Value,
					Headers: r.Headers, Timestamp: r.Timestamp}, nil) // a failed record makes End abort
			})
		}
		// Ending must not be cut short by ctx: it is the clean stop.
		ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		committed, err := sess.End(ectx, kgo.TryCommit)
		cancel()
		if err != nil {
			return fmt.Errorf("franz peer: end transaction: %w", err)
		}
		if committed {
			c.txns.Add(1)
			c.records.Add(n)
			c.mu.Lock()
			c.latencies = append(c.latencies, time.Since(start))
			c.mu.Unlock()
		} else {
			c.aborts.Add(1)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}
