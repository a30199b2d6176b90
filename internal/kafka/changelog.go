package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrChangelogUnstable means a changelog partition kept a transaction open,
// begun before the restore did, for longer than the restore waits (the
// transaction timeout). Retryable: the session ends and the replica joins
// again; a producer that died with a transaction open is aborted by the
// broker once the transaction timeout has passed.
var ErrChangelogUnstable = errors.New("kafka: changelog partition has a transaction open")

// ErrOffsetGone means the changelog no longer holds the requested offset:
// retention or compaction moved its start past it. The caller wipes the
// task's state and restores from the start.
var ErrOffsetGone = errors.New("kafka: changelog offset below the log start")

// ChangelogRecord is one record read back from a changelog.
type ChangelogRecord struct {
	Offset int64
	Key    []byte
	Value  []byte // nil: a tombstone
}

// ChangelogReader replays changelog partitions read_committed. Restores
// read from an offset to the partition's last stable offset and must know
// exactly when they got there, control records included, which the
// franz-go client exposes; the engine's consumer group stays on sarama.
type ChangelogReader struct {
	c            Client
	stableWithin time.Duration

	// Waiting, when set, is called once per Read that has to wait for
	// open transactions to end, with the offsets it found.
	Waiting func(topic string, partition int32, stable, end int64)
}

// NewChangelogReader prepares a reader; it connects on each Read. A Read
// waits up to stableWithin (the transaction timeout) for transactions open
// on the partition when it began to end.
func NewChangelogReader(c Client, stableWithin time.Duration) *ChangelogReader {
	return &ChangelogReader{c: c, stableWithin: stableWithin}
}

// Bounds returns the partition's log start and last stable offset.
func (r *ChangelogReader) Bounds(ctx context.Context, topic string, partition int32) (start, end int64, err error) {
	cl, err := r.client()
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	b, err := bounds(ctx, kadm.NewClient(cl), topic, partition)
	return b.start, b.stable, err
}

// offsets are a partition's log start, last stable offset (the first
// offset of its oldest open transaction, or its end when none is open) and
// end (high watermark).
type offsets struct{ start, stable, end int64 }

func bounds(ctx context.Context, adm *kadm.Client, topic string, partition int32) (offsets, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return offsets{}, fmt.Errorf("kafka: changelog %s start offsets: %w", topic, err)
	}
	stables, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return offsets{}, fmt.Errorf("kafka: changelog %s stable offsets: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return offsets{}, fmt.Errorf("kafka: changelog %s end offsets: %w", topic, err)
	}
	s, ok1 := starts.Lookup(topic, partition)
	l, ok2 := stables.Lookup(topic, partition)
	e, ok3 := ends.Lookup(topic, partition)
	if !ok1 || !ok2 || !ok3 || s.Err != nil || l.Err != nil || e.Err != nil {
		return offsets{}, fmt.Errorf("kafka: changelog %s/%d has no offsets: %v %v %v", topic, partition, s.Err, l.Err, e.Err)
	}
	return offsets{start: s.Offset, stable: l.Offset, end: e.Offset}, nil
}

// waitStable waits until no transaction that was open on the partition
// when it was called is still open: until the last stable offset reaches
// the end offset seen then. EndTxn returns before the commit markers reach
// the partition, so a task's previous owner can have committed a
// transaction (its input offsets included) whose changelog records are not
// readable yet; reading only to the last stable offset would miss them.
func (r *ChangelogReader) waitStable(ctx context.Context, adm *kadm.Client, topic string, partition int32) (offsets, error) {
	o, err := bounds(ctx, adm, topic, partition)
	if err != nil || o.stable >= o.end {
		return o, err
	}
	if r.Waiting != nil {
		r.Waiting(topic, partition, o.stable, o.end)
	}
	target := o.end
	deadline := time.Now().Add(r.stableWithin)
	wait := 5 * time.Millisecond
	for o.stable < target {
		if time.Now().After(deadline) {
			return o, fmt.Errorf("%w: %s/%d: last stable offset %d still below the end offset %d after %v", ErrChangelogUnstable, topic, partition, o.stable, target, r.stableWithin)
		}
		select {
		case <-ctx.Done():
			return o, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
		if o, err = bounds(ctx, adm, topic, partition); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Read replays topic/partition from offset from up to its last stable
// offset, handing fn batches of data records with the offset to resume
// from after each batch. It first waits (see waitStable) until every
// transaction open on the partition when it was called has ended, so the
// replay includes every transaction committed before the call, markers
// written or not. It returns ErrOffsetGone when from is below the log
// start, and ErrChangelogUnstable when a transaction stays open too long.
func (r *ChangelogReader) Read(ctx context.Context, topic string, partition int32, from int64, fn func(batch []ChangelogRecord, next int64) error) error {
	cl, err := r.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	o, err := r.waitStable(ctx, kadm.NewClient(cl), topic, partition)
	if err != nil {
		return err
	}
	start, end := o.start, o.stable
	if from < start {
		return fmt.Errorf("%w: %s/%d holds offsets from %d, state has %d", ErrOffsetGone, topic, partition, start, from)
	}
	if from >= end {
		return nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}})
	pos := from
	for pos < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("kafka: read changelog %s/%d: %w", topic, partition, ferr)
		}
		var batch []ChangelogRecord
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset >= pos {
				pos = rec.Offset + 1
			}
			if rec.Attrs.IsControl() || rec.Offset >= end {
				return
			}
			batch = append(batch, ChangelogRecord{Offset: rec.Offset, Key: rec.Key, Value: rec.Value})
		})
		if len(batch) > 0 || pos > from {
			if err := fn(batch, min(pos, end)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *ChangelogReader) client() (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(r.c.Brokers...),
		kgo.ClientID("onceflow-restore"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.DialTimeout(5 * time.Second),
	}
	sc := r.c.security()
	if r.c.Dial != nil {
		// TLS runs over the connection Dial opens (dialTLS).
		sc.TLS = nil
		opts = append(opts, kgo.Dialer(r.c.dialTLS))
	}
	sec, err := sc.Options()
	if err != nil {
		return nil, fmt.Errorf("kafka: changelog reader: %w", err)
	}
	cl, err := kgo.NewClient(append(opts, sec...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: changelog reader: %w", err)
	}
	return cl, nil
}
