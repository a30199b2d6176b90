package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

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
	c Client
}

// NewChangelogReader prepares a reader; it connects on each Read.
func NewChangelogReader(c Client) *ChangelogReader { return &ChangelogReader{c: c} }

// Bounds returns the partition's log start and last stable offset.
func (r *ChangelogReader) Bounds(ctx context.Context, topic string, partition int32) (start, end int64, err error) {
	cl, err := r.client()
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	return bounds(ctx, kadm.NewClient(cl), topic, partition)
}

func bounds(ctx context.Context, adm *kadm.Client, topic string, partition int32) (int64, int64, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("kafka: changelog %s start offsets: %w", topic, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("kafka: changelog %s end offsets: %w", topic, err)
	}
	s, ok1 := starts.Lookup(topic, partition)
	e, ok2 := ends.Lookup(topic, partition)
	if !ok1 || !ok2 || s.Err != nil || e.Err != nil {
		return 0, 0, fmt.Errorf("kafka: changelog %s/%d has no offsets: %v %v", topic, partition, s.Err, e.Err)
	}
	return s.Offset, e.Offset, nil
}

// Read replays topic/partition from offset from up to its last stable
// offset at the time of the call, handing fn batches of data records with
// the offset to resume from after each batch. It returns ErrOffsetGone when
// from is below the log start.
func (r *ChangelogReader) Read(ctx context.Context, topic string, partition int32, from int64, fn func(batch []ChangelogRecord, next int64) error) error {
	cl, err := r.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	start, end, err := bounds(ctx, kadm.NewClient(cl), topic, partition)
	if err != nil {
		return err
	}
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
	if r.c.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(r.c.TLS))
	}
	if r.c.SASL.Mechanism != "" {
		opts = append(opts, kgo.SASL(plain.Auth{User: r.c.SASL.User, Pass: r.c.SASL.Password}.AsMechanism()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: changelog reader: %w", err)
	}
	return cl, nil
}
