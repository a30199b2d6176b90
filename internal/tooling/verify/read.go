package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
)

// Record is one committed data record as read back from a topic.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	// Headers holds the record's headers; when a key repeats, the last
	// value wins.
	Headers   map[string]string
	Timestamp time.Time
}

// ErrTopicNotFound is wrapped by the error ReadAll and Lineage return for a
// topic that does not exist. It is not retryable unless the topic is
// created.
var ErrTopicNotFound = errors.New("verify: topic does not exist")

type topicNotFoundError struct{ topic string }

func (e topicNotFoundError) Error() string {
	return fmt.Sprintf("verify: topic %q does not exist", e.topic)
}
func (e topicNotFoundError) Is(t error) bool { return t == ErrTopicNotFound }

// ReadAll reads every committed data record of topic, from each partition's
// log start to its last stable offset, sorted by partition and offset. A
// transaction open when the call starts is waited for, briefly (see
// settle): its records are read if it commits within that wait. Unreachable brokers are reported within
// clientcfg.ProbeTimeout; the whole read is bounded by ctx. extra are
// client options appended to the defaults (TLS, SASL:
// clientcfg.Security.Options).
func ReadAll(ctx context.Context, brokers []string, topic string, extra ...kgo.Opt) ([]Record, error) {
	// One client per read: the read pauses partitions it has finished,
	// which must not leak into another read of the same topic.
	cl, err := newClient(ctx, brokers, extra)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	recs, _, err := readFrom(ctx, cl, topic, nil)
	return recs, err
}

// ReadFrom reads the committed data records of topic as ReadAll does, but
// each partition from its offset in from (from its log start when absent
// or below it), and returns them with the offsets to read from next: a
// caller that follows a topic reads each record once.
func ReadFrom(ctx context.Context, brokers []string, topic string, from map[int32]int64, extra ...kgo.Opt) ([]Record, map[int32]int64, error) {
	cl, err := newClient(ctx, brokers, extra)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	return readFrom(ctx, cl, topic, from)
}

// newClient builds a read_committed client that keeps control records and
// checks that the brokers answer.
func newClient(ctx context.Context, brokers []string, extra []kgo.Opt) (*kgo.Client, error) {
	if len(brokers) == 0 {
		return nil, errors.New("verify: no brokers given")
	}
	opts := append(clientcfg.Options(brokers, "onceflow-verify", nil),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("verify: client: %w", err)
	}
	if err := clientcfg.Probe(ctx, cl, brokers); err != nil {
		cl.Close()
		return nil, fmt.Errorf("verify: %w", err)
	}
	return cl, nil
}

// bounds returns each partition's log start and last stable offset.
func bounds(ctx context.Context, adm *kadm.Client, topic string) (start, end map[int32]int64, err error) {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: metadata for %q: %w", topic, err)
	}
	td, ok := tds[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, nil, topicNotFoundError{topic}
	}
	if td.Err != nil {
		return nil, nil, fmt.Errorf("verify: metadata for %q: %w", topic, td.Err)
	}
	list := func(what string, fn func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
		lo, err := fn(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("verify: list %s offsets of %q: %w", what, topic, err)
		}
		if err := lo.Error(); err != nil {
			return nil, fmt.Errorf("verify: list %s offsets of %q: %w", what, topic, err)
		}
		m := make(map[int32]int64, len(td.Partitions))
		lo.Each(func(o kadm.ListedOffset) { m[o.Partition] = o.Offset })
		for p := range td.Partitions {
			if _, ok := m[p]; !ok {
				return nil, fmt.Errorf("verify: list %s offsets of %q: no answer for partition %d", what, topic, p)
			}
		}
		return m, nil
	}
	if start, err = list("start", adm.ListStartOffsets); err != nil {
		return nil, nil, err
	}
	// ListCommittedOffsets is ListOffsets(latest) with read_committed
	// isolation: the last stable offset.
	if end, err = list("last stable", adm.ListCommittedOffsets); err != nil {
		return nil, nil, err
	}
	high, err := list("end", adm.ListEndOffsets)
	if err != nil {
		return nil, nil, err
	}
	end, err = settle(ctx, topic, end, high, func() (map[int32]int64, error) {
		return list("last stable", adm.ListCommittedOffsets)
	})
	return start, end, err
}

// maxSettle bounds how long a read waits for the transactions open when it
// starts to end.
const maxSettle = 10 * time.Second

// settle waits until every partition's last stable offset reaches its high
// watermark as the read found it: the transactions that had written to the
// topic before the read have ended. A group's committed offsets become
// visible as soon as the offsets topic has its commit marker, a moment
// before the output partitions have theirs; without the wait, a read made
// right after the input is seen consumed would count that last
// transaction's outputs missing. It waits at most maxSettle and at most
// half of what is left of ctx (a transaction left open by a dead producer
// lasts until its timeout), then returns the last stable offsets it has:
// records of a transaction still open are never read.
func settle(ctx context.Context, topic string, lso, high map[int32]int64, again func() (map[int32]int64, error)) (map[int32]int64, error) {
	open := func() bool {
		for p, h := range high {
			if lso[p] < h {
				return true
			}
		}
		return false
	}
	if !open() {
		return lso, nil
	}
	wait := maxSettle
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)/2)
	}
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for open() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("verify: waiting for open transactions on %q: %w", topic, ctx.Err())
		case <-tick.C:
		}
		next, err := again()
		if err != nil {
			return nil, err
		}
		lso = next
	}
	return lso, nil
}

// readFrom reads topic from each partition's offset in from (nil: from
// the log start) to its last stable offset, and returns the records with
// those last stable offsets.
func readFrom(ctx context.Context, cl *kgo.Client, topic string, from map[int32]int64) ([]Record, map[int32]int64, error) {
	start, end, err := bounds(ctx, kadm.NewClient(cl), topic)
	if err != nil {
		return nil, nil, err
	}

	pos := make(map[int32]int64, len(end))
	consume := make(map[int32]kgo.Offset)
	var want int64
	for p, e := range end {
		pos[p] = max(start[p], from[p])
		if pos[p] < e {
			consume[p] = kgo.NewOffset().At(pos[p])
			want += e - pos[p]
		}
	}
	next := make(map[int32]int64, len(end))
	for p, e := range end {
		next[p] = max(e, pos[p])
	}
	if len(consume) == 0 {
		return nil, next, nil
	}
	out := make([]Record, 0, want)
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: consume})

	remaining := len(consume)
	var lastFetchErr error
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("verify: reading %q: %d of %d partitions not read to their end: %w%s",
				topic, remaining, len(end), err, fetchErrNote(lastFetchErr))
		}
		if fs.IsClientClosed() {
			return nil, nil, fmt.Errorf("verify: reading %q: client closed", topic)
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				lastFetchErr = err
			}
		})
		var done []int32
		fs.EachRecord(func(r *kgo.Record) {
			p, e := r.Partition, end[r.Partition]
			if r.Offset+1 > pos[p] {
				before := pos[p]
				pos[p] = r.Offset + 1
				if before < e && pos[p] >= e {
					done = append(done, p)
				}
			}
			if r.Attrs.IsControl() || r.Offset >= e {
				return // a transaction marker, or past the snapshot
			}
			out = append(out, toRecord(r))
		})
		if len(done) > 0 {
			remaining -= len(done)
			cl.PauseFetchPartitions(map[string][]int32{topic: done})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out, next, nil
}

func fetchErrNote(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (last fetch error: %v)", err)
}

func toRecord(r *kgo.Record) Record {
	rec := Record{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp,
	}
	if len(r.Headers) > 0 {
		rec.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			rec.Headers[h.Key] = string(h.Value)
		}
	}
	return rec
}
