package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/IBM/sarama"

	"github.com/onceflow/onceflow/internal/wire"
)

// unixEpoch is the earliest timestamp a record can carry.
var unixEpoch = time.Unix(0, 0)

// Message is one record to produce. Partition is chosen by the caller.
type Message struct {
	Topic     string
	Partition int32
	Key       []byte
	Value     []byte
	Headers   []wire.Header
	// Source, when set, is written as the header wire.HeaderSource after
	// Headers, replacing any such header among them (the lineage).
	Source    []byte
	Timestamp time.Time
	// Track asks for the record's offset: see TrackedOffsets. Only on a
	// producer created with tracking.
	Track bool
}

var sourceHeaderKey = []byte(wire.HeaderSource)

// msgTag is the metadata of every message sent: the generation it was
// sent in (a Reset or ResetTracked starts a new one) and whether its offset
// is recorded. A failure or acknowledgement of an earlier generation (one
// that arrives after the abort that ended its transaction) is not
// attributed to the current one.
type msgTag struct {
	gen     uint64
	tracked bool
}

// tags are the two tags of one generation, shared by its messages so that
// Send allocates none.
type tags struct{ plain, tracked *msgTag }

func newTags(gen uint64) *tags {
	return &tags{plain: &msgTag{gen: gen}, tracked: &msgTag{gen: gen, tracked: true}}
}

// ErrCallTimeout means a transactional call (or an at-least-once flush or
// offset commit) did not return within its deadline. Its outcome is
// unknown and the producer is unusable: close it (Close returns at once
// for such a producer and finishes in the background) and create another
// with the same transactional id, which fences this one and aborts its
// transaction. Not retryable on this producer.
var ErrCallTimeout = errors.New("kafka: call did not finish within its deadline; outcome unknown")

// TxnState classifies a transactional producer after a failed call.
type TxnState int

const (
	// TxnReady: no transaction open, the producer can begin one.
	TxnReady TxnState = iota
	// TxnOpen: a transaction is open.
	TxnOpen
	// TxnAbortable: the open transaction must be aborted; the producer
	// stays usable after the abort.
	TxnAbortable
	// TxnFatal: the producer is fenced or timed out and must be closed and
	// created again with the same transactional id.
	TxnFatal
	// TxnUnknown: none of the above (an EndTxn in flight, or its outcome
	// unknown).
	TxnUnknown
)

func (s TxnState) String() string {
	return [...]string{"ready", "open", "abortable", "fatal", "unknown"}[s]
}

// GroupMetadata identifies the group member on whose behalf offsets are
// committed in a transaction (KIP-447): a member whose generation is stale
// cannot commit.
type GroupMetadata struct {
	GroupID      string
	GenerationID int32
	MemberID     string
	InstanceID   string
}

// Producer writes records, transactionally when built with a transactional
// id, idempotently otherwise. One goroutine drives it.
type Producer struct {
	client sarama.Client
	ap     sarama.AsyncProducer
	txnal  bool

	sent    atomic.Int64 // records handed to the client
	settled atomic.Int64 // records acknowledged or failed (at-least-once)
	track   bool
	tags    atomic.Pointer[tags] // of the current generation
	// abandoned: a call ran past its deadline and still holds the client.
	abandoned atomic.Bool
	mu        struct {
		sync.Mutex
		err          error // first produce error since the last Reset
		trackSent    int64
		trackSettled int64
		offsets      map[string]map[int32]int64 // next offset after the tracked records acknowledged
	}
	drained sync.WaitGroup
}

// NewProducer creates a producer. With a transactional id it initialises
// the id with the coordinator (fencing any previous producer with that id
// and aborting its open transaction). With track, the offsets of messages
// sent with Track are recorded (it costs a hand-off per record).
// maxMessageBytes bounds one record and one partition's batch, as sarama
// counts them (0: 1 MiB); see Admin.MaxMessageBytes.
func NewProducer(c Client, t Timeouts, transactionalID string, track bool, maxMessageBytes int) (*Producer, error) {
	return newProducer(c, t, transactionalID, track, maxMessageBytes, 0)
}

// NewBurstProducer creates an idempotent producer that tracks offsets, for
// a writer that sends its records in bursts and then waits for all of
// them (Flush, TrackedOffsets): it gathers what is sent within linger
// into one request per broker. Without it sarama sends a burst's first
// record alone and the rest in several requests after it, one round trip
// each (a burst of 6 records to 6 partitions of one broker took four).
func NewBurstProducer(c Client, t Timeouts, linger time.Duration) (*Producer, error) {
	return newProducer(c, t, "", true, 0, linger)
}

func newProducer(c Client, t Timeouts, transactionalID string, track bool, maxMessageBytes int, linger time.Duration) (*Producer, error) {
	cfg := producerConfig(c, t.WithDefaults(), transactionalID, maxMessageBytes)
	if track {
		cfg.Producer.Return.Successes = true
	}
	if linger > 0 {
		cfg.Producer.Flush.Frequency = linger
	}
	client, err := sarama.NewClient(c.Brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka: producer client: %w", err)
	}
	ap, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("kafka: producer %q: %w", transactionalID, err)
	}
	p := &Producer{client: client, ap: ap, txnal: transactionalID != "", track: track}
	p.mu.offsets = map[string]map[int32]int64{}
	p.tags.Store(newTags(0))
	p.drained.Add(1)
	go func() {
		defer p.drained.Done()
		for e := range ap.Errors() {
			p.failed(e)
		}
	}()
	if cfg.Producer.Return.Successes {
		p.drained.Add(1)
		go func() {
			defer p.drained.Done()
			for m := range ap.Successes() {
				p.acknowledged(m)
			}
		}()
	}
	return p, nil
}

// current reports whether m was sent in the current generation.
func (p *Producer) current(m *sarama.ProducerMessage) (tag *msgTag, ok bool) {
	tag, _ = m.Metadata.(*msgTag)
	return tag, tag != nil && tag.gen == p.tags.Load().plain.gen
}

// failed records a produce failure. One of an earlier generation (its
// transaction was aborted and the producer Reset since) is only counted
// as settled: it must not fail the next transaction.
func (p *Producer) failed(e *sarama.ProducerError) {
	tag, cur := p.current(e.Msg)
	p.mu.Lock()
	if cur {
		if p.mu.err == nil {
			p.mu.err = fmt.Errorf("kafka: produce to %s/%d: %w", e.Msg.Topic, e.Msg.Partition, e.Err)
		}
		if tag.tracked {
			p.mu.trackSettled++
		}
	}
	p.mu.Unlock()
	p.settled.Add(1)
}

// acknowledged records a produced record's offset when it is tracked.
func (p *Producer) acknowledged(m *sarama.ProducerMessage) {
	if tag, cur := p.current(m); cur && tag.tracked {
		p.mu.Lock()
		parts := p.mu.offsets[m.Topic]
		if parts == nil {
			parts = map[int32]int64{}
			p.mu.offsets[m.Topic] = parts
		}
		parts[m.Partition] = max(parts[m.Partition], m.Offset+1)
		p.mu.trackSettled++
		p.mu.Unlock()
	}
	p.settled.Add(1)
}

// nextGeneration starts a generation: what earlier messages report from
// now on is not attributed to the messages sent after it.
func (p *Producer) nextGeneration() {
	p.tags.Store(newTags(p.tags.Load().plain.gen + 1))
}

// Begin opens a transaction.
func (p *Producer) Begin() error { return named(p.ap.BeginTxn()) }

// Send hands m to the client. Failures surface through Err, and make the
// open transaction abortable.
func (p *Producer) Send(m *Message) {
	pm := p.message(m)
	p.sent.Add(1)
	p.ap.Input() <- pm
}

// outMessage is a sarama message with room for what it points to: its key
// and value encoders and the first headers. One allocation per record
// instead of one for each of them.
type outMessage struct {
	pm         sarama.ProducerMessage
	key, value sarama.ByteEncoder
	headers    [2]sarama.RecordHeader
}

// message converts m for sarama and tags it with the current generation.
// The message refers to m's bytes (sarama only reads them); header keys are
// viewed as bytes without a copy.
func (p *Producer) message(m *Message) *sarama.ProducerMessage {
	o := &outMessage{key: m.Key, value: m.Value}
	pm := &o.pm
	pm.Topic, pm.Partition = m.Topic, m.Partition
	// A time before 1970 is none: Kafka's -1 (no timestamp) reads back as
	// 1 ms before 1970, which sarama cannot write (the whole request would
	// fail); left zero, sarama stamps the record with the clock.
	if !m.Timestamp.Before(unixEpoch) {
		pm.Timestamp = m.Timestamp
	}
	if m.Key != nil {
		pm.Key = &o.key
	}
	if m.Value != nil {
		pm.Value = &o.value
	}
	if n := len(m.Headers); n > 0 || m.Source != nil {
		if m.Source != nil {
			n++
		}
		if n <= len(o.headers) {
			pm.Headers = o.headers[:0]
		} else {
			pm.Headers = make([]sarama.RecordHeader, 0, n)
		}
		for _, h := range m.Headers {
			if m.Source != nil && h.Key == wire.HeaderSource {
				continue
			}
			pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: unsafe.Slice(unsafe.StringData(h.Key), len(h.Key)), Value: h.Value})
		}
		if m.Source != nil {
			pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: sourceHeaderKey, Value: m.Source})
		}
	}
	if m.Track && p.track {
		pm.Metadata = p.tags.Load().tracked
		p.mu.Lock()
		p.mu.trackSent++
		p.mu.Unlock()
	} else {
		pm.Metadata = p.tags.Load().plain
	}
	return pm
}

// TrackedOffsets waits until every tracked message sent since the last
// ResetTracked is acknowledged (after a successful commit they all are, or
// about to be handed over) and returns, per topic and partition, the
// offset after the last one.
func (p *Producer) TrackedOffsets(ctx context.Context) (map[string]map[int32]int64, error) {
	for {
		p.mu.Lock()
		if p.mu.trackSettled >= p.mu.trackSent {
			out := p.mu.offsets
			p.mu.Unlock()
			return out, nil
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Microsecond):
		}
	}
}

// ResetTracked forgets tracked offsets, at the start of a transaction.
func (p *Producer) ResetTracked() {
	p.nextGeneration()
	p.mu.Lock()
	p.mu.offsets = map[string]map[int32]int64{}
	p.mu.trackSent, p.mu.trackSettled = 0, 0
	p.mu.Unlock()
}

// within runs call, a blocking sarama call that takes no context, and
// returns its error, or ErrCallTimeout when ctx ends first. The call then
// goes on in the background and the producer is abandoned: only Close may
// follow.
func (p *Producer) within(ctx context.Context, what string, call func() error) error {
	if p.abandoned.Load() {
		return fmt.Errorf("kafka: %s: %w (an earlier call is still running)", what, ErrCallTimeout)
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		p.abandoned.Store(true)
		return fmt.Errorf("kafka: %s: %w (%w)", what, ErrCallTimeout, ctx.Err())
	}
}

// AddOffsets adds the consumed offsets (next offset to read, per topic and
// partition) to the open transaction on behalf of the group member g. It
// returns ErrCallTimeout when ctx ends first.
func (p *Producer) AddOffsets(ctx context.Context, offsets map[string]map[int32]int64, g GroupMetadata) error {
	req := make(map[string][]*sarama.PartitionOffsetMetadata, len(offsets))
	for topic, parts := range offsets {
		for part, off := range parts {
			req[topic] = append(req[topic], &sarama.PartitionOffsetMetadata{Partition: part, Offset: off, LeaderEpoch: -1})
		}
	}
	meta := &sarama.ConsumerGroupMetadata{GroupID: g.GroupID, GenerationID: g.GenerationID, MemberID: g.MemberID}
	if g.InstanceID != "" {
		id := g.InstanceID
		meta.GroupInstanceID = &id
	}
	return p.within(ctx, "add offsets to transaction", func() error { return named(p.ap.AddOffsetsToTxnWithGroupMetadata(req, meta)) })
}

// Commit flushes every record sent and commits the transaction. It returns
// ErrCallTimeout when ctx ends first.
func (p *Producer) Commit(ctx context.Context) error {
	return p.within(ctx, "commit transaction", func() error { return named(p.ap.CommitTxn()) })
}

// Abort aborts the transaction. It returns ErrCallTimeout when ctx ends
// first.
func (p *Producer) Abort(ctx context.Context) error {
	return p.within(ctx, "abort transaction", func() error { return named(p.ap.AbortTxn()) })
}

// State classifies the producer's transaction state.
func (p *Producer) State() TxnState {
	s := p.ap.TxnStatus()
	switch {
	case s&sarama.ProducerTxnFlagFatalError != 0:
		return TxnFatal
	case s&sarama.ProducerTxnFlagAbortableError != 0:
		return TxnAbortable
	case s&sarama.ProducerTxnFlagReady != 0:
		return TxnReady
	case s&sarama.ProducerTxnFlagInTransaction != 0:
		return TxnOpen
	}
	return TxnUnknown
}

// Err returns the first produce error since the last Reset.
func (p *Producer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.err
}

// Reset forgets produce errors, after the transaction they failed was
// aborted. Failures of records sent before it that arrive later are
// ignored.
func (p *Producer) Reset() {
	p.nextGeneration()
	p.mu.Lock()
	p.mu.err = nil
	p.mu.Unlock()
}

// Flush waits until every record sent is acknowledged or failed and returns
// the first failure. For the idempotent (at-least-once) producer only.
func (p *Producer) Flush(ctx context.Context) error {
	if p.txnal {
		return errors.New("kafka: Flush on a transactional producer: commit flushes")
	}
	t := time.NewTicker(200 * time.Microsecond)
	defer t.Stop()
	for p.settled.Load() < p.sent.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return p.Err()
}

// CommitOffsets commits consumed offsets outside a transaction, for the
// at-least-once mode, on behalf of group member g. It goes through the
// producer's own connections: the group consumer's connection to the same
// broker is held by long-polling fetches, behind which a commit would wait.
// It returns ErrCallTimeout when ctx ends first.
func (p *Producer) CommitOffsets(ctx context.Context, offsets map[string]map[int32]int64, g GroupMetadata) error {
	return p.within(ctx, "commit offsets", func() error { return p.commitOffsets(offsets, g) })
}

func (p *Producer) commitOffsets(offsets map[string]map[int32]int64, g GroupMetadata) error {
	b, err := p.client.Coordinator(g.GroupID)
	if err != nil {
		return fmt.Errorf("kafka: group coordinator: %w", err)
	}
	req := sarama.NewOffsetCommitRequest(p.client.Config(), g.GroupID)
	req.ConsumerGroupGeneration = g.GenerationID
	req.ConsumerID = g.MemberID
	if g.InstanceID != "" {
		id := g.InstanceID
		req.GroupInstanceId = &id
	}
	for topic, parts := range offsets {
		for part, off := range parts {
			req.AddBlockWithLeaderEpoch(topic, part, off, -1, 0, "")
		}
	}
	resp, err := b.CommitOffset(req)
	if err != nil {
		p.client.RefreshCoordinator(g.GroupID)
		return fmt.Errorf("kafka: commit offsets: %w", err)
	}
	for topic, parts := range resp.Errors {
		for part, kerr := range parts {
			if kerr != sarama.ErrNoError {
				if coordinatorMoved(kerr) {
					_ = p.client.RefreshCoordinator(g.GroupID)
				}
				return fmt.Errorf("kafka: commit offset %s/%d: %w", topic, part, kerr)
			}
		}
	}
	return nil
}

// Close closes the producer. It does not abort an open transaction: abort
// first. A producer abandoned by a call past its deadline has its
// connections closed first, which fails the call sarama still runs; Close
// then waits for sarama to wind down (bounded by its retries, each failing
// at once on the closed client).
func (p *Producer) Close() error {
	if p.abandoned.Load() {
		p.client.Close()
	}
	err := p.ap.Close()
	p.drained.Wait()
	p.client.Close()
	var pe sarama.ProducerErrors
	if errors.As(err, &pe) {
		return nil // already reported through Err
	}
	return err
}
