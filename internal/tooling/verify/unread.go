package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Counting unread records. A transactional topic's offsets count its
// commit and abort markers and its aborted records too, so "last stable
// offset minus committed offset" is not what a consumer has left to read:
// after every transaction a group that read everything is committed at
// the marker, one offset short. unread reads the record batches of the
// span read_committed, as a consumer would, and counts the data records
// it would be given. It reads only the batch headers: no record is
// decompressed or decoded.

// span is a partition's offsets [from, to) to count, and its leader.
type span struct {
	partition int32
	leader    int32
	from, to  int64
}

// unread counts the data records in each span that a read_committed
// consumer would be given (control records and aborted records
// excluded). It reads at most budget offsets in all; a span beyond the
// budget, or one this client may not read (no READ on the topic), is
// counted by its offsets (markers included), and exact is then false.
func unread(ctx context.Context, cl *kgo.Client, topic string, id [16]byte, spans []span, budget int64) (counts map[int32]int64, exact bool, err error) {
	counts, exact = map[int32]int64{}, true
	for _, s := range spans {
		if s.to-s.from > budget {
			counts[s.partition] = s.to - s.from
			exact = false
			continue
		}
		n, err := countSpan(ctx, cl, topic, id, s)
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			// DESCRIBE without READ: the offsets are all there is.
			counts[s.partition] = s.to - s.from
			exact = false
			continue
		}
		if err != nil {
			return nil, false, err
		}
		counts[s.partition] = n
		budget -= s.to - s.from
	}
	return counts, exact, nil
}

// fetchBytes bounds one fetch of countSpan.
const fetchBytes = 4 << 20

// countSpan counts the data records of one span, fetching from its leader
// read_committed until the batches reach s.to.
func countSpan(ctx context.Context, cl *kgo.Client, topic string, id [16]byte, s span) (int64, error) {
	var n int64
	aborts := aborted{}
	for pos := s.from; pos < s.to; {
		req := kmsg.NewPtrFetchRequest()
		req.IsolationLevel = 1 // read_committed: the broker returns batches below the last stable offset
		req.MaxBytes = fetchBytes
		req.MinBytes = 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = s.partition, pos, fetchBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(s.leader)))
		if err != nil {
			return 0, fmt.Errorf("verify: fetch %s/%d at %d: %w", topic, s.partition, pos, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, fmt.Errorf("verify: fetch %s/%d at %d: an answer without the partition", topic, s.partition, pos)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return 0, fmt.Errorf("verify: fetch %s/%d at %d: %w", topic, s.partition, pos, err)
		}
		aborts.add(p.AbortedTransactions)
		next, counted := countBatches(p.RecordBatches, pos, s.to, aborts)
		n += counted
		if next <= pos {
			break // nothing more below the last stable offset
		}
		pos = next
	}
	return n, nil
}

// countBatches counts the data records at offsets [from, to) of the
// complete batches in raw that a read_committed consumer is given, and
// returns the offset after the last batch read.
func countBatches(raw []byte, from, to int64, aborts aborted) (next, n int64) {
	next = from
	for len(raw) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size < 12 || size > len(raw) {
			break // a batch cut by the fetch's size limit: fetched again next time
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			break
		}
		raw = raw[size:]
		first, last := b.FirstOffset, b.FirstOffset+int64(b.LastOffsetDelta)
		if last < next {
			continue // a batch the previous fetch read, or before from
		}
		next = last + 1
		const transactional, control = 0x10, 0x20
		isTxn, isControl := b.Attributes&transactional != 0, b.Attributes&control != 0
		if isTxn && aborts.covers(b.ProducerID, first) {
			if isControl {
				aborts.end(b.ProducerID) // the marker that ends the aborted transaction
			}
			continue
		}
		if isControl || first >= to {
			continue
		}
		// A batch's records are its offsets but for those compaction
		// removed: exact for a whole batch, a bound for a cut one.
		lo, hi := max(first, from), min(last, to-1)
		n += max(0, min(int64(b.NumRecords), hi-lo+1))
	}
	return next, n
}

// aborted holds, per producer, the first offsets of its aborted
// transactions not yet ended by their abort marker, ascending.
type aborted map[int64][]int64

// add records the aborted transactions a fetch answer lists.
func (a aborted) add(txns []kmsg.FetchResponseTopicPartitionAbortedTransaction) {
	for _, t := range txns {
		if !slices.Contains(a[t.ProducerID], t.FirstOffset) {
			a[t.ProducerID] = append(a[t.ProducerID], t.FirstOffset)
			slices.Sort(a[t.ProducerID])
		}
	}
}

// covers reports whether a transactional batch of producer pid at offset
// first belongs to an aborted transaction.
func (a aborted) covers(pid, first int64) bool {
	fs := a[pid]
	return len(fs) > 0 && first >= fs[0]
}

// end drops pid's earliest aborted transaction: its marker was read.
func (a aborted) end(pid int64) {
	if fs := a[pid]; len(fs) > 1 {
		a[pid] = fs[1:]
	} else {
		delete(a, pid)
	}
}
