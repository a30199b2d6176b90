package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// topicPartition names one partition of a topic.
type topicPartition struct {
	topic string
	p     int32
}

func bounds(ctx context.Context, adm *kadm.Client, topic string, p int32) (offsets, error) {
	all, err := allBounds(ctx, adm, []topicPartition{{topic, p}})
	return all[topicPartition{topic, p}], err
}

// allBounds lists the offsets of every partition given, one request of
// each kind for all their topics.
func allBounds(ctx context.Context, adm *kadm.Client, parts []topicPartition) (map[topicPartition]offsets, error) {
	var topics []string
	for _, tp := range parts {
		if !slices.Contains(topics, tp.topic) {
			topics = append(topics, tp.topic)
		}
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: changelogs %v start offsets: %w", topics, err)
	}
	stables, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: changelogs %v stable offsets: %w", topics, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: changelogs %v end offsets: %w", topics, err)
	}
	out := make(map[topicPartition]offsets, len(parts))
	for _, tp := range parts {
		s, ok1 := starts.Lookup(tp.topic, tp.p)
		l, ok2 := stables.Lookup(tp.topic, tp.p)
		e, ok3 := ends.Lookup(tp.topic, tp.p)
		if !ok1 || !ok2 || !ok3 || s.Err != nil || l.Err != nil || e.Err != nil {
			return nil, fmt.Errorf("kafka: changelog %s/%d has no offsets: %v %v %v", tp.topic, tp.p, s.Err, l.Err, e.Err)
		}
		out[tp] = offsets{start: s.Offset, stable: l.Offset, end: e.Offset}
	}
	return out, nil
}

// waitStable waits until no transaction that was open on any of the
// partitions when it was called is still open: until each one's last
// stable offset reaches the end offset seen then. EndTxn returns before
// the commit markers reach the partition, so a task's previous owner can
// have committed a transaction (its input offsets included) whose
// changelog records are not readable yet; reading only to the last stable
// offset would miss them.
func (r *ChangelogReader) waitStable(ctx context.Context, adm *kadm.Client, parts []topicPartition) (map[topicPartition]offsets, error) {
	o, err := allBounds(ctx, adm, parts)
	if err != nil {
		return nil, err
	}
	target := map[topicPartition]int64{}
	for _, tp := range parts {
		if b := o[tp]; b.stable < b.end {
			target[tp] = b.end
			if r.Waiting != nil {
				r.Waiting(tp.topic, tp.p, b.stable, b.end)
			}
		}
	}
	deadline := time.Now().Add(r.stableWithin)
	wait := 5 * time.Millisecond
	for {
		for tp, end := range target {
			if o[tp].stable >= end {
				delete(target, tp)
			}
		}
		if len(target) == 0 {
			return o, nil
		}
		if time.Now().After(deadline) {
			for tp, end := range target {
				return nil, fmt.Errorf("%w: %s/%d: last stable offset %d still below the end offset %d after %v", ErrChangelogUnstable, tp.topic, tp.p, o[tp].stable, end, r.stableWithin)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
		if o, err = allBounds(ctx, adm, parts); err != nil {
			return nil, err
		}
	}
}

// Read replays topic/partition from offset from up to its last stable
// offset, handing fn batches of data records with the offset to resume
// from after each batch. It first waits (see waitStable) until every
// transaction open on the partition when it was called has ended, so the
// replay includes every transaction committed before the call, markers
// written or not. It returns ErrOffsetGone when from is below the log
// start, and ErrChangelogUnstable when a transaction stays open too long.
func (r *ChangelogReader) Read(ctx context.Context, topic string, partition int32, from int64, fn func(batch []ChangelogRecord, next int64) error) error {
	return r.ReadAll(ctx, []ChangelogRange{{Topic: topic, Partition: partition, From: from}}, nil,
		func(_ int, batch []ChangelogRecord, next int64) error { return fn(batch, next) })
}

// ChangelogRange is one changelog partition to replay, from From to its
// end.
type ChangelogRange struct {
	Topic     string
	Partition int32
	From      int64
}

// ReadAll replays the changelog partitions of ranges at once, with one
// client fetching all of them, each from its From to its last stable
// offset; it is Read for many partitions. fn gets the batches of ranges[i]
// with i, in offset order per partition, from one goroutine. A range whose
// From is below its partition's log start is handed to gone (with that
// start) before anything is read, and read from the start when gone
// returns nil; with gone nil, ReadAll returns ErrOffsetGone instead.
func (r *ChangelogReader) ReadAll(ctx context.Context, ranges []ChangelogRange, gone func(i int, start int64) error, fn func(i int, batch []ChangelogRecord, next int64) error) error {
	cl, err := r.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	parts := make([]topicPartition, len(ranges))
	for i, rg := range ranges {
		parts[i] = topicPartition{rg.Topic, rg.Partition}
	}
	o, err := r.waitStable(ctx, kadm.NewClient(cl), parts)
	if err != nil {
		return err
	}
	todo := map[topicPartition]*progress{}
	consume := map[string]map[int32]kgo.Offset{}
	for i, rg := range ranges {
		b, from := o[parts[i]], rg.From
		if from < b.start {
			if gone == nil {
				return fmt.Errorf("%w: %s/%d holds offsets from %d, state has %d", ErrOffsetGone, rg.Topic, rg.Partition, b.start, from)
			}
			if err := gone(i, b.start); err != nil {
				return err
			}
			from = b.start
		}
		if from >= b.stable {
			continue
		}
		todo[parts[i]] = &progress{i: i, pos: from, end: b.stable}
		if consume[rg.Topic] == nil {
			consume[rg.Topic] = map[int32]kgo.Offset{}
		}
		consume[rg.Topic][rg.Partition] = kgo.NewOffset().At(from)
	}
	if len(todo) == 0 {
		return nil
	}
	cl.AddConsumePartitions(consume)
	for len(todo) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			ferr = fmt.Errorf("kafka: read changelog %s/%d: %w", topic, p, err)
		})
		if ferr != nil {
			return ferr
		}
		var done []topicPartition
		var perr error
		fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
			tp := topicPartition{ftp.Topic, ftp.Partition}
			pr := todo[tp]
			if pr == nil || perr != nil || len(ftp.Records) == 0 {
				return
			}
			batch, next := pr.take(ftp.Records)
			if perr = fn(pr.i, batch, next); perr == nil && pr.pos >= pr.end {
				done = append(done, tp)
			}
		})
		if perr != nil {
			return perr
		}
		if len(done) > 0 {
			stop := map[string][]int32{}
			for _, tp := range done {
				stop[tp.topic] = append(stop[tp.topic], tp.p)
				delete(todo, tp)
			}
			cl.PauseFetchPartitions(stop)
		}
	}
	return nil
}

// progress is how far ReadAll has read one partition.
type progress struct {
	i        int   // index in the ranges
	pos, end int64 // next offset to read; the last stable offset to read to
}

// take returns the data records of recs below the end and the offset to
// resume from after them, and moves pos past recs (control records
// included). Keys and values are copied into one slab: the client's
// records point into its whole fetch response, which a batch handed on
// would otherwise keep in memory.
func (pr *progress) take(recs []*kgo.Record) ([]ChangelogRecord, int64) {
	keep := func(rec *kgo.Record) bool {
		return !rec.Attrs.IsControl() && rec.Offset >= pr.pos && rec.Offset < pr.end
	}
	n, size := 0, 0
	for _, rec := range recs {
		if keep(rec) {
			n++
			size += len(rec.Key) + len(rec.Value)
		}
	}
	batch := make([]ChangelogRecord, 0, n)
	slab := make([]byte, 0, size)
	for _, rec := range recs {
		if keep(rec) {
			k := len(slab)
			slab = append(slab, rec.Key...)
			key := slab[k:len(slab):len(slab)]
			var value []byte // nil: a tombstone
			if rec.Value != nil {
				v := len(slab)
				slab = append(slab, rec.Value...)
				value = slab[v:len(slab):len(slab)]
			}
			batch = append(batch, ChangelogRecord{Offset: rec.Offset, Key: key, Value: value})
		}
		if rec.Offset >= pr.pos {
			pr.pos = rec.Offset + 1
		}
	}
	return batch, min(pr.pos, pr.end)
}

func (r *ChangelogReader) client() (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(r.c.Brokers...),
		kgo.ClientID("onceflow-restore"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100 * time.Millisecond),
		// A restore reads every changelog partition of a session at once:
		// up to 1 MiB of each per fetch (the default), 8 MiB in all.
		kgo.FetchMaxBytes(8 << 20),
		kgo.DialTimeout(5 * time.Second),
	}
	tlsCfg := r.c.TLS
	if r.c.Dial != nil {
		// TLS runs over the connection Dial opens (dialTLS).
		tlsCfg = nil
		opts = append(opts, kgo.Dialer(r.c.dialTLS))
	}
	sec, err := franzSecurity(tlsCfg, r.c.SASL)
	if err != nil {
		return nil, fmt.Errorf("kafka: changelog reader: %w", err)
	}
	cl, err := kgo.NewClient(append(opts, sec...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: changelog reader: %w", err)
	}
	return cl, nil
}
