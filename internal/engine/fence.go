package engine

// The generation proof of a transaction that consumed nothing.
//
// KIP-447 fences a replica the group has evicted only in TxnOffsetCommit:
// the broker checks the member's generation there, and reports it per
// partition named, so an offset commit that names no partition proves
// nothing. A transaction opened by a wall-clock punctuator holds outputs,
// state changes and cleanup (dedup expiry tombstones) on behalf of tasks
// but no input offsets; it names the positions of the tasks' claimed
// partitions again, unchanged, so that a zombie's transaction is refused
// and aborts as one with input would be.

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/statestore"
)

// errNothingToFence: a transaction without input in a session that claims
// no partition of the tasks it wrote for.
var errNothingToFence = errors.New("engine: no claimed partition to prove the generation with")

// fence keeps what a session knows of the group's positions.
type fence struct {
	known map[string]map[int32]int64 // committed next offset of claimed partitions, as far as the session knows
	tasks map[statestore.Task]bool   // the tasks the open transaction punctuated
}

// committed records the next offsets a transaction committed.
func (f *fence) committed(offsets map[string]map[int32]int64) {
	for topic, parts := range offsets {
		if f.known == nil {
			f.known = map[string]map[int32]int64{}
		}
		if f.known[topic] == nil {
			f.known[topic] = map[int32]int64{}
		}
		for p, off := range parts {
			f.known[topic][p] = off
		}
	}
}

// wrote notes a task the open transaction writes for without input.
func (f *fence) wrote(t statestore.Task) {
	if f.tasks == nil {
		f.tasks = map[statestore.Task]bool{}
	}
	f.tasks[t] = true
}

// forget drops what the session knows of a partition it no longer claims.
func (f *fence) forget(tp topicPartition) {
	if f.known[tp.topic] != nil {
		delete(f.known[tp.topic], tp.partition)
	}
}

// reset forgets the open transaction's tasks.
func (f *fence) reset() { clear(f.tasks) }

// positions fetches the committed next offsets of partitions from the
// group (kafka.Admin.Positions for the application's group).
type positions func(ctx context.Context, partitions map[string][]int32) (map[string]map[int32]int64, error)

// proof returns the offsets a transaction without input commits: the
// positions of every claimed partition of the tasks it punctuated (of
// every claimed partition when it names none), those the session does not
// know yet fetched from the group once.
func (f *fence) proof(ctx context.Context, g *graph.Graph, claims map[string][]int32, fetch positions) (map[string]map[int32]int64, error) {
	want := map[string][]int32{}
	var missing map[string][]int32
	for topic, parts := range claims {
		if g.Source(topic) == nil {
			continue
		}
		sub := g.SubTopologyOf(topic)
		for _, p := range parts {
			if len(f.tasks) > 0 && !f.tasks[statestore.Task{SubTopology: sub, Partition: p}] {
				continue
			}
			want[topic] = append(want[topic], p)
			if _, ok := f.known[topic][p]; !ok {
				if missing == nil {
					missing = map[string][]int32{}
				}
				missing[topic] = append(missing[topic], p)
			}
		}
	}
	if len(want) == 0 {
		return nil, errNothingToFence
	}
	if len(missing) > 0 {
		got, err := fetch(ctx, missing)
		if err != nil {
			return nil, fmt.Errorf("engine: positions to prove the generation with: %w", err)
		}
		f.committed(got)
	}
	out := make(map[string]map[int32]int64, len(want))
	for topic, ps := range want {
		out[topic] = make(map[int32]int64, len(ps))
		for _, p := range ps {
			out[topic][p] = f.known[topic][p]
		}
	}
	return out, nil
}
