package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/onceflow/onceflow/internal/kafka"
)

// ErrRepeatedFailure stops a replica whose transactions keep failing on
// the same input records: rewinding again would only fail again. Not
// retryable without a change (a fix to the topology, the topics or the
// cluster); the error names the partition, the offset and the last failure.
var ErrRepeatedFailure = errors.New("engine: the same input keeps failing")

// RepeatBound is how many transactions in a row, with no commit between
// them, may fail on the same input partition and offset before the
// replica stops with ErrRepeatedFailure.
const RepeatBound = 5

// topicPartition names one input partition.
type topicPartition struct {
	topic     string
	partition int32
}

// repeats counts, per input partition, the failed transactions in a row
// that began at the same offset. Failures the cluster may clear by itself
// (a leader moving, a network error, fencing, a transaction the producer
// no longer has open) are not counted: they are not the input's doing.
type repeats struct {
	mu sync.Mutex
	at map[topicPartition]repeat
}

type repeat struct {
	offset int64
	n      int
}

// failed records a failed transaction that began at starts (per topic and
// partition, the offset of its first record) and returns ErrRepeatedFailure,
// wrapped with the coordinates and err, once a partition reached the bound.
func (r *repeats) failed(starts map[string]map[int32]int64, step string, err error) error {
	if kafka.Retriable(err) || errors.Is(err, errUnknownOutcome) || kafka.IsTxnNotReady(err) {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[topicPartition]repeat{}
	}
	var worst topicPartition
	var most repeat
	for _, topic := range slices.Sorted(maps.Keys(starts)) {
		for _, p := range slices.Sorted(maps.Keys(starts[topic])) {
			tp, off := topicPartition{topic, p}, starts[topic][p]
			rp := r.at[tp]
			if rp.offset != off || rp.n == 0 {
				rp = repeat{offset: off}
			}
			rp.n++
			r.at[tp] = rp
			if rp.n > most.n {
				worst, most = tp, rp
			}
		}
	}
	if most.n < RepeatBound {
		return nil
	}
	return fmt.Errorf("%w: %d transactions in a row starting at %s/%d offset %d failed without a commit; the replica stops instead of rewinding again (last failure at %s: %w)",
		ErrRepeatedFailure, most.n, worst.topic, worst.partition, most.offset, step, err)
}

// committed forgets the partitions a committed transaction moved on.
func (r *repeats) committed(offsets map[string]map[int32]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for topic, parts := range offsets {
		for p := range parts {
			delete(r.at, topicPartition{topic, p})
		}
	}
}
