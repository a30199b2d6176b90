package engine

// The open transaction's bookkeeping: whether one is open, since when and
// until when, the input it consumed and what it will count at commit.

import (
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
)

// maxTxnBytes commits a transaction early once its input records' keys
// and values reach it. Until the commit, the producer may hold every
// output of the transaction (sarama buffers records by count, thousands
// per stage), and outputs share or outgrow their input's bytes: so a slow
// output cluster holds at most about this much, whatever the records'
// size, instead of thousands of large records.
const maxTxnBytes = 16 << 20

// interval is the open transaction (or at-least-once interval) of a
// session, as the driver keeps count of it; it does no I/O.
type interval struct {
	open     bool
	offsets  map[string]map[int32]int64 // next offset of each partition consumed
	starts   map[string]map[int32]int64 // offset of each partition's first record in the transaction
	records  int
	bytes    int // input keys and values in the transaction
	started  time.Time
	pending  tally       // what the transaction will count when it commits
	deadline *time.Timer // fires one commit interval after the transaction began
}

// newInterval returns a closed interval with its deadline stopped.
func newInterval() *interval {
	iv := &interval{offsets: map[string]map[int32]int64{}, starts: map[string]map[int32]int64{},
		pending: newTally(), deadline: time.NewTimer(time.Hour)}
	iv.deadline.Stop()
	return iv
}

// begin opens the interval; its deadline fires after every.
func (iv *interval) begin(every time.Duration) {
	iv.open = true
	iv.started = time.Now()
	iv.deadline.Reset(every)
}

// starting remembers where a partition's records in the transaction
// begin (repeat detection counts failures from there).
func (iv *interval) starting(b kafka.Batch) {
	parts := iv.starts[b.Topic]
	if parts == nil {
		parts = map[int32]int64{}
		iv.starts[b.Topic] = parts
	}
	if _, ok := parts[b.Partition]; !ok {
		parts[b.Partition] = b.Records[0].Offset
	}
}

// consumed adds a batch processed whole for task to the transaction: its
// next offset, records and bytes.
func (iv *interval) consumed(b kafka.Batch, task string) {
	parts := iv.offsets[b.Topic]
	if parts == nil {
		parts = map[int32]int64{}
		iv.offsets[b.Topic] = parts
	}
	parts[b.Partition] = b.Records[len(b.Records)-1].Offset + 1
	iv.records += len(b.Records)
	iv.bytes += b.Bytes
	iv.pending.in[task] += len(b.Records)
}

// full reports whether the open transaction reached its size: records,
// or maxTxnBytes of input.
func (iv *interval) full(records int) bool {
	return iv.open && (iv.records >= records || iv.bytes >= maxTxnBytes)
}

// empty reports whether the transaction consumed, produced and rejected
// nothing (its state changes aside).
func (iv *interval) empty() bool {
	return iv.records == 0 && len(iv.offsets) == 0 && len(iv.pending.out) == 0 && len(iv.pending.rejected) == 0
}

// age is how long the transaction has been open.
func (iv *interval) age() time.Duration { return time.Since(iv.started) }

// reset closes the interval and forgets what it held.
func (iv *interval) reset() {
	iv.deadline.Stop()
	iv.open = false
	iv.records, iv.bytes = 0, 0
	clear(iv.offsets)
	clear(iv.starts)
	iv.pending.clear()
}
