package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// storeInfo is what the engine knows of one store.
type storeInfo struct {
	graph.Store
	sub   int
	topic string // changelog topic
}

// changelogTopic names a store's changelog.
func changelogTopic(app, store string) string { return app + "-" + store + "-changelog" }

// storeInfos lists the graph's stores with their sub-topology and changelog.
func (e *Engine) storeInfos() map[string]storeInfo {
	out := map[string]storeInfo{}
	for _, st := range e.g.SubTopologies {
		for _, s := range st.Stores {
			out[s.Name] = storeInfo{Store: s, sub: st.ID, topic: changelogTopic(e.cfg.AppID, s.Name)}
		}
	}
	return out
}

// openState opens the replica's Pebble database.
func (e *Engine) openState() error {
	var dedup []string
	for name, s := range e.restorer.stores {
		if s.Kind == graph.StoreDedup {
			dedup = append(dedup, name)
		}
	}
	slices.Sort(dedup)
	db, err := statestore.Open(e.cfg.StateDir, statestore.Options{Logger: e.log.Named("state"), DedupStores: dedup})
	if err != nil {
		return fmt.Errorf("engine: state: %w", err)
	}
	e.restorer.db = db
	e.restorer.byTopic = map[string]string{}
	for name, s := range e.restorer.stores {
		e.restorer.byTopic[s.topic] = name
	}
	return nil
}

// changelogChunk is how many unsent state changes an input batch leaves
// for later: below it, they wait for a later batch or the commit, so a
// key written in several batches is sent once.
//
// Measured with BenchmarkOrders (exactly-once, 30,000 events, embedded
// broker in the process), six pairs against sending after every batch on
// a loaded two-core machine: 2.10 -> 1.65-1.79 changelog records per
// event, CPU per event 24.4 -> 23.4 us (median; lower in 5 of 6 pairs),
// throughput without a consistent difference. Sending everything at commit
// (1.59-1.75 records per event) cost more CPU (23.5 -> 25.2 us) and
// throughput in each of 3 pairs: the commit waited for the whole
// changelog, and the transactions shrank under that pressure.
const changelogChunk = 8192

// produceChanges sends, after an input batch, the transaction's unsent
// state changes to their changelogs once they are changelogChunk or more
// (see sendChanges).
func (d *driver) produceChanges() {
	if len(d.txn.Changes())-d.changesSent >= changelogChunk {
		d.sendChanges()
	}
}

// sendChanges sends the transaction's unsent state changes to their
// changelogs: from produceChanges, and at commit. Only the last write of
// each key among them is sent: a hot key (a running total) written by
// every record costs one changelog record per chunk, not one per record,
// and a restore, which sees the transaction whole or not at all, only ever
// needs the last value. Sending chunks as the transaction takes input,
// rather than everything at commit, keeps the commit short: the changelog
// partitions join the transaction (AddPartitionsToTxn) and their records
// are on the wire while the transaction is still taking input.
func (d *driver) sendChanges() {
	changes := d.txn.Changes()
	chunk := changes[d.changesSent:]
	if len(chunk) == 0 {
		return
	}
	// Walk back from the newest change: the first time a key is met is its
	// last write in the chunk, the one to send.
	if d.seen == nil {
		d.seen = map[changeKey]struct{}{}
	}
	clear(d.seen)
	d.send = slices.Grow(d.send[:0], len(chunk))[:len(chunk)]
	for i := len(chunk) - 1; i >= 0; i-- {
		c := &chunk[i]
		k := changeKey{c.Store, c.Task, string(c.Key)}
		_, later := d.seen[k]
		d.send[i] = !later
		if !later {
			d.seen[k] = struct{}{}
		}
	}
	sent := len(d.seen)
	now := time.Now()
	collapsed := len(chunk) - sent
	for i, c := range chunk {
		if !d.send[i] {
			continue
		}
		s := d.e.restorer.stores[c.Store]
		var value []byte
		if !c.Tombstone {
			value = c.Value
		}
		d.p.Send(&kafka.Message{Topic: s.topic, Partition: c.Task.Partition, Key: c.Key, Value: value, Track: true, Timestamp: now})
	}
	d.changesSent = len(changes)
	d.e.m.changesSent.Add(int64(sent))
	d.e.m.changesCollapsed.Add(int64(collapsed))
}

// changeKey identifies a state key across stores and tasks.
type changeKey struct {
	store string
	task  statestore.Task
	key   string
}

// applyState writes the committed transaction's state to Pebble with each
// touched task's changelog offset.
func (d *driver) applyState() error {
	if h := d.e.cfg.Hooks.ApplyError; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.e.cfg.Timeouts.Transaction)
	defer cancel()
	tracked, err := d.p.TrackedOffsets(ctx)
	if err != nil {
		return fmt.Errorf("changelog offsets: %w", err)
	}
	offsets := map[statestore.StoreTask]int64{}
	for topic, parts := range tracked {
		name, ok := d.e.restorer.byTopic[topic]
		if !ok {
			continue
		}
		for p, off := range parts {
			offsets[statestore.StoreTask{Store: name, Task: statestore.Task{SubTopology: d.e.restorer.stores[name].sub, Partition: p}}] = off
		}
	}
	return d.txn.Apply(offsets)
}
