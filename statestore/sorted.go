package statestore

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// batchOp is one operation of a batch, a Set or a Delete, and its position
// in the batch.
type batchOp struct {
	key, value []byte
	seq        int
	kind       pebble.InternalKeyKind
}

// collapse returns a batch holding, in key order, the last operation b
// holds on each key: what applying b leaves in the database, since a batch
// applies atomically and nothing sees the values in between. Applying keys
// in order makes consecutive memtable inserts walk the same skiplist path,
// which stays in the CPU cache (a transaction stages them in the order its
// records came, a random walk of a memtable much larger than the cache),
// and a key written several times (a customer's running total) is inserted
// once.
//
// Measured with BenchmarkOrdersState (the orders topology's state work, in
// back-to-back runs on a shared two-core machine): at 300,000 events of
// state, 17.0 and 18.6 µs of CPU per event against 19.1 and 19.9 without
// (-9 %), the memtable inserts' share of the profile down from 0.72 to
// 0.25 s for 0.24 s of collapsing; at 3,000,000 events, 20.8 and 24.8 µs
// against 27.1 to 37.3. End to end on real Kafka (orders exactly-once,
// one broker, 6 partitions, 100 ms), back to back: 26.9 against 29.9 CPU s
// per million events at 300,000 events (-10 %), 35.7 against 41.4 at
// 3,000,000 (-14 %); in the profiles of 3,000,000 events, memtable inserts
// 9.0 s -> 3.5 s plus 3.2 s of collapsing, compactions 9.2 -> 5.5 s,
// flushes 3.5 -> 1.4 s. An earlier pair on a busier machine showed no
// difference (40.4 with it, 39.9 and 40.4 without).
//
// scratch is reused space for the operations; the new batch owns its bytes.
func collapse(pdb *pebble.DB, b *pebble.Batch, scratch *[]batchOp) (*pebble.Batch, error) {
	ops := (*scratch)[:0]
	defer func() {
		clear(ops)
		*scratch = ops[:0]
	}()
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("statestore: read batch: %w", err)
		}
		if !ok {
			break
		}
		ops = append(ops, batchOp{key: key, value: value, seq: len(ops), kind: kind})
	}
	slices.SortFunc(ops, func(a, b batchOp) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	out := pdb.NewBatchWithSize(len(b.Repr()))
	for i, op := range ops {
		if i+1 < len(ops) && bytes.Equal(ops[i+1].key, op.key) {
			continue // a later operation on the key wins
		}
		var err error
		switch op.kind {
		case pebble.InternalKeyKindSet:
			err = out.Set(op.key, op.value, nil)
		case pebble.InternalKeyKindDelete:
			err = out.Delete(op.key, nil)
		default:
			err = fmt.Errorf("statestore: unexpected batch operation %v", op.kind)
		}
		if err != nil {
			_ = out.Close()
			return nil, err
		}
	}
	return out, nil
}
