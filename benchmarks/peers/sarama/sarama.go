// Package sarama is the benchmark's floor: the plainest correct
// exactly-once copy loop on IBM/sarama, with no topology and no state.
//
// One consumer group member and one transactional producer (KIP-447: the
// offsets join the transaction with the member's live generation). Each
// claim hands its records to one driver goroutine in batches; the driver
// owns the producer: it opens a transaction for the first record of an
// interval, sends every record to the output (same partition, same key,
// value, headers and timestamp), and every commit interval adds the
// consumed offsets with AddOffsetsToTxnWithGroupMetadata and commits. A
// failed step aborts (or, when the producer is fenced or its state is
// fatal, recreates it) and ends the session, so consumption resumes from
// the committed offsets: sarama cannot seek a claim back.
//
// The client settings are the engine's (internal/kafka), so the loop shows
// what sarama allows onceflow at best.
package sarama

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// Config configures one member.
type Config struct {
	Brokers        []string
	Group          string // the consumer group; the transactional id is Group-InstanceID
	InstanceID     string // static member id, unique among live members
	Input, Output  string
	CommitInterval time.Duration // default 100 ms
}

// Stats are the loop's counters.
type Stats struct {
	Records      int64
	Transactions int64
	Aborts       int64
	Recreations  int64
	// CommitLatencies holds the time of each AddOffsets and CommitTxn.
	CommitLatencies []time.Duration
}

// Copier is one member of the copy loop.
type Copier struct {
	cfg Config

	records, txns, aborts, recreations atomic.Int64
	mu                                 struct {
		sync.Mutex
		latencies []time.Duration
	}
}

// New checks cfg; it does no I/O.
func New(cfg Config) (*Copier, error) {
	if len(cfg.Brokers) == 0 || cfg.Group == "" || cfg.InstanceID == "" || cfg.Input == "" || cfg.Output == "" {
		return nil, errors.New("sarama peer: brokers, group, instance id, input and output are required")
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
		Recreations: c.recreations.Load(), CommitLatencies: append([]time.Duration(nil), c.mu.latencies...)}
}

const (
	sessionTimeout = 10 * time.Second
	txnTimeout     = 8 * time.Second
)

func baseConfig(clientID string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.ClientID = clientID
	cfg.Net.ReadTimeout = 35 * time.Second
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Metadata.Retry.Max = int(txnTimeout/cfg.Metadata.Retry.Backoff) + 8
	cfg.Metadata.AllowAutoTopicCreation = false
	return cfg
}

func (c *Copier) consumerConfig() *sarama.Config {
	cfg := baseConfig("sarama-peer-" + c.cfg.InstanceID)
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.InstanceId = c.cfg.InstanceID
	cfg.Consumer.Group.Session.Timeout = sessionTimeout
	cfg.Consumer.Group.Heartbeat.Interval = sessionTimeout / 5
	cfg.Consumer.Group.Rebalance.Timeout = 30 * time.Second
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategySticky()}
	cfg.Consumer.Fetch.Default = 4 << 20
	cfg.Consumer.MaxProcessingTime = time.Second
	cfg.ChannelBufferSize = 1024
	return cfg
}

func (c *Copier) producerConfig() *sarama.Config {
	cfg := baseConfig("sarama-peer-" + c.cfg.InstanceID)
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 5
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = sarama.CompressionNone
	cfg.Net.MaxOpenRequests = 1
	cfg.ChannelBufferSize = 4096
	cfg.Producer.Transaction.ID = c.cfg.Group + "-" + c.cfg.InstanceID
	cfg.Producer.Transaction.Timeout = txnTimeout
	cfg.Producer.Transaction.Retry.Max = 50
	cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// producer is a transactional producer with its errors drained.
type producer struct {
	ap      sarama.AsyncProducer
	mu      sync.Mutex
	err     error
	drained chan struct{}
}

func (c *Copier) newProducer() (*producer, error) {
	ap, err := sarama.NewAsyncProducer(c.cfg.Brokers, c.producerConfig())
	if err != nil {
		return nil, fmt.Errorf("sarama peer: producer: %w", err)
	}
	p := &producer{ap: ap, drained: make(chan struct{})}
	go func() {
		defer close(p.drained)
		for e := range ap.Errors() {
			p.mu.Lock()
			if p.err == nil {
				p.err = e.Err
			}
			p.mu.Unlock()
		}
	}()
	return p, nil
}

func (p *producer) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *producer) close() {
	_ = p.ap.Close()
	<-p.drained
}

// Run consumes and copies until ctx ends, then commits the open
// transaction and returns nil.
func (c *Copier) Run(ctx context.Context) error {
	group, err := sarama.NewConsumerGroup(c.cfg.Brokers, c.cfg.Group, c.consumerConfig())
	if err != nil {
		return fmt.Errorf("sarama peer: consumer group: %w", err)
	}
	defer group.Close()
	go func() {
		for range group.Errors() {
		}
	}()
	var p *producer
	defer func() {
		if p != nil {
			p.close()
		}
	}()
	for ctx.Err() == nil {
		if p == nil {
			if p, err = c.newProducer(); err != nil {
				return err
			}
		}
		sctx, cancel := context.WithCancel(ctx)
		h := &handler{c: c, p: p, rewind: cancel}
		err := group.Consume(sctx, []string{c.cfg.Input}, h)
		cancel()
		p = h.p // nil when the driver dropped it
		if errors.Is(err, sarama.ErrFencedInstancedId) {
			return fmt.Errorf("sarama peer: %w", err)
		}
		if err != nil && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// handler runs one group session.
type handler struct {
	c       *Copier
	p       *producer
	rewind  context.CancelFunc
	batches chan []*sarama.ConsumerMessage
	finish  chan struct{}
	done    chan struct{}
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	h.batches = make(chan []*sarama.ConsumerMessage, 64)
	h.finish = make(chan struct{})
	h.done = make(chan struct{})
	id := h.c.cfg.InstanceID
	d := &driver{h: h, s: s, meta: sarama.NewConsumerGroupMetadataFromSession(s, h.c.cfg.Group, &id),
		offsets: map[int32]int64{}}
	go func() {
		defer close(h.done)
		d.run()
	}()
	return nil
}

// Cleanup runs once every claim stopped: the driver commits what it sent.
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error {
	close(h.finish)
	<-h.done
	return nil
}

// ConsumeClaim hands the claim's records to the driver in batches: the
// first record blocks, then whatever is already buffered joins it.
func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	ctx := s.Context()
	msgs := claim.Messages()
	for {
		var b []*sarama.ConsumerMessage
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			b = append(make([]*sarama.ConsumerMessage, 0, 64), m)
		}
	fill:
		for len(b) < 512 {
			select {
			case m, ok := <-msgs:
				if !ok {
					break fill
				}
				b = append(b, m)
			default:
				break fill
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case h.batches <- b:
		}
	}
}

// driver owns the producer for one session.
type driver struct {
	h       *handler
	s       sarama.ConsumerGroupSession
	meta    *sarama.ConsumerGroupMetadata
	open    bool
	failed  bool
	records int64
	offsets map[int32]int64 // next offset to consume, per input partition
}

func (d *driver) run() {
	tick := time.NewTicker(d.h.c.cfg.CommitInterval)
	defer tick.Stop()
	for {
		select {
		case b := <-d.h.batches:
			if !d.failed {
				d.send(b)
			}
		case <-tick.C:
			if d.open && !d.failed {
				d.commit()
			}
		case <-d.h.finish:
			if d.open && !d.failed {
				d.commit()
			}
			return
		}
	}
}

func (d *driver) send(b []*sarama.ConsumerMessage) {
	p := d.h.p
	if !d.open {
		if err := p.ap.BeginTxn(); err != nil {
			d.fail(err)
			return
		}
		d.open = true
	}
	out := d.h.c.cfg.Output
	for _, m := range b {
		pm := &sarama.ProducerMessage{Topic: out, Partition: m.Partition, Timestamp: m.Timestamp}
		if m.Key != nil {
			pm.Key = sarama.ByteEncoder(m.Key)
		}
		if m.Value != nil {
			pm.Value = sarama.ByteEncoder(m.Value)
		}
		if len(m.Headers) > 0 {
			pm.Headers = make([]sarama.RecordHeader, len(m.Headers))
			for i, hd := range m.Headers {
				pm.Headers[i] = *hd
			}
		}
		p.ap.Input() <- pm
	}
	last := b[len(b)-1]
	d.offsets[last.Partition] = last.Offset + 1
	d.records += int64(len(b))
}

func (d *driver) commit() {
	p := d.h.p
	if err := p.failure(); err != nil {
		d.fail(err)
		return
	}
	start := time.Now()
	offs := make([]*sarama.PartitionOffsetMetadata, 0, len(d.offsets))
	for part, off := range d.offsets {
		offs = append(offs, &sarama.PartitionOffsetMetadata{Partition: part, Offset: off, LeaderEpoch: -1})
	}
	if err := p.ap.AddOffsetsToTxnWithGroupMetadata(map[string][]*sarama.PartitionOffsetMetadata{d.h.c.cfg.Input: offs}, d.meta); err != nil {
		d.fail(err)
		return
	}
	var err error
	for range 3 { // retry only an outcome sarama left undecided
		if err = p.ap.CommitTxn(); err == nil || p.ap.TxnStatus()&(sarama.ProducerTxnFlagAbortableError|sarama.ProducerTxnFlagFatalError|sarama.ProducerTxnFlagReady) != 0 {
			break
		}
	}
	if err != nil {
		d.fail(err)
		return
	}
	c := d.h.c
	c.txns.Add(1)
	c.records.Add(d.records)
	c.mu.Lock()
	c.mu.latencies = append(c.mu.latencies, time.Since(start))
	c.mu.Unlock()
	d.open, d.records = false, 0
	clear(d.offsets)
}

// fail aborts the transaction, or drops the producer when it cannot, and
// ends the session so the next one starts from the committed offsets.
func (d *driver) fail(err error) {
	p := d.h.p
	c := d.h.c
	c.aborts.Add(1)
	st := p.ap.TxnStatus()
	drop := st&sarama.ProducerTxnFlagFatalError != 0 || errors.Is(err, sarama.ErrProducerFenced)
	if !drop && st&(sarama.ProducerTxnFlagInTransaction|sarama.ProducerTxnFlagAbortableError) != 0 {
		if aerr := p.ap.AbortTxn(); aerr != nil {
			drop = true
		}
	}
	if drop {
		p.close()
		d.h.p = nil
		c.recreations.Add(1)
	} else {
		p.mu.Lock()
		p.err = nil
		p.mu.Unlock()
	}
	d.open, d.failed, d.records = false, true, 0
	clear(d.offsets)
	d.h.rewind()
}
