package gen

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/onceflow/onceflow/examples/allstages"
	"github.com/onceflow/onceflow/internal/wire"
)

// AllStagesTruth is what the allstages topology must produce from a plan's
// records and closers, exactly once each.
//
// What it does not predict: the order in which a task interleaves its two
// source topics, so not the value of a count output at a given offset
// (only that each key's counts are 1..n once each), nor the punctuators'
// firing times (a stream-time firing follows the first record a task
// reads; a wall-clock one the replica's clock). Of the ticks it says the
// final tally per source partition; a checker holds each partition's
// ticks to strictly increasing firing times and non-decreasing tallies.
type AllStagesTruth struct {
	Partitions int `json:"partitions"`
	// Input counts the records written (closers included).
	Input int `json:"input"`
	// Accepted counts the events past both gates.
	Accepted int `json:"accepted"`
	// Rejections counts rejected records by reason: duplicate and
	// conflict (dedup), stale (version gate), late (once per window stage
	// per line of a late event).
	Rejections map[string]int `json:"rejections"`
	// AccountCounts is each account's number of accepted events: its
	// count outputs are 1..n, once each.
	AccountCounts map[string]int64 `json:"account_counts"`
	// ItemCounts is each item's number of lines: its outputs are 1..n.
	ItemCounts map[string]int64 `json:"item_counts"`
	// Lines are the line-hook sink's expected effects, one per line.
	Lines []allstages.Line `json:"lines"`
	// Tally is the final wall-clock tick of each source partition: the
	// events that partition's task accepted.
	Tally map[int32]int64 `json:"tally"`
	// Windows are the final results of every window closed by the end of
	// the input (the closers' windows stay open).
	Windows []allstages.WindowResult `json:"windows"`
}

// SimulateAllStages computes the truth of recs, read in order (the records
// of a plan, then its closers), on partitions partitions.
func SimulateAllStages(recs []AllStagesRecord, partitions int) (AllStagesTruth, error) {
	n := int32(partitions)
	t := AllStagesTruth{Partitions: partitions, Input: len(recs), Rejections: map[string]int{},
		AccountCounts: map[string]int64{}, ItemCounts: map[string]int64{}, Tally: map[int32]int64{}}
	seen := map[string][sha256.Size]byte{}
	versions := map[string]uint64{}
	times := map[string][]int64{}   // on-time line times per item
	streamTime := map[int32]int64{} // per partition of the item topics
	for _, r := range recs {
		if h, ok := seen[r.EventID]; ok {
			if h == sha256.Sum256(r.Value) {
				t.Rejections["duplicate"]++
			} else {
				t.Rejections["conflict"]++
			}
			continue
		}
		seen[r.EventID] = sha256.Sum256(r.Value)
		var e allstages.Event
		if err := json.Unmarshal(r.Value, &e); err != nil {
			return t, fmt.Errorf("gen: allstages record %s: %w", r.EventID, err)
		}
		if v, ok := versions[e.Order]; ok && e.Version <= v {
			t.Rejections["stale"]++
			continue
		}
		versions[e.Order] = e.Version
		t.Accepted++
		t.AccountCounts[e.Account]++
		t.Tally[wire.Partition([]byte(e.Account), 0, n)]++
		for i, item := range e.Items {
			t.ItemCounts[item]++
			t.Lines = append(t.Lines, allstages.Line{EventID: e.ID, Index: i, Item: item, Account: e.Account, Amount: e.Amount, At: e.At})
			q := wire.Partition([]byte(item), 0, n)
			if st, ok := streamTime[q]; ok && late(e.At, st) {
				t.Rejections["late"] += len(allstages.WindowKinds)
				continue
			}
			streamTime[q] = max(streamTime[q], e.At)
			times[item] = append(times[item], e.At)
		}
	}
	items := make([]string, 0, len(times))
	for item := range times {
		items = append(items, item)
	}
	sort.Strings(items)
	for _, item := range items {
		ts := times[item]
		slices.Sort(ts)
		t.Windows = append(t.Windows, windowResults(item, ts, streamTime[wire.Partition([]byte(item), 0, n)])...)
	}
	return t, nil
}

// late reports whether a record at ts is late for every window stage at
// stream time st. The plans keep records either well within every grace
// or far beyond it, so one rule holds for the four kinds.
func late(ts, st int64) bool {
	return ts+(allstages.HoppingSize+allstages.Grace+allstages.SessionGap).Milliseconds() < st
}

// windowResults are the closed windows of one item's record times (sorted)
// at final stream time st, for every window kind.
func windowResults(item string, ts []int64, st int64) []allstages.WindowResult {
	grace := allstages.Grace.Milliseconds()
	count := func(start, end int64, endIncluded bool) int64 {
		var c int64
		for _, x := range ts {
			if x >= start && (x < end || endIncluded && x == end) {
				c++
			}
		}
		return c
	}
	var out []allstages.WindowResult
	// Tumbling and hopping: [start, end), closed once st >= end + grace.
	fixed := func(kind string, size, advance int64) {
		starts := map[int64]bool{}
		for _, x := range ts {
			for s := x - x%advance; s > x-size && s >= 0; s -= advance {
				starts[s] = true
			}
		}
		keys := make([]int64, 0, len(starts))
		for s := range starts {
			keys = append(keys, s)
		}
		slices.Sort(keys)
		for _, s := range keys {
			if st >= s+size+grace {
				out = append(out, allstages.WindowResult{Kind: kind, Item: item, Start: s, End: s + size, Count: count(s, s+size, false)})
			}
		}
	}
	fixed(allstages.WindowTumbling, allstages.Tumbling.Milliseconds(), allstages.Tumbling.Milliseconds())
	fixed(allstages.WindowHopping, allstages.HoppingSize.Milliseconds(), allstages.HoppingAdvance.Milliseconds())

	// Sliding (KIP-450): [t - d, t] for every record at t, and [t + 1,
	// t + 1 + d] when a record follows within d + 1; closed once
	// st > end + grace.
	d := allstages.Sliding.Milliseconds()
	type span struct{ start, end int64 }
	sliding := map[span]bool{}
	for i, x := range ts {
		sliding[span{x - d, x}] = true
		for _, y := range ts[i+1:] {
			if y > x && y <= x+d+1 {
				sliding[span{x + 1, x + 1 + d}] = true
				break
			}
			if y > x+d+1 {
				break
			}
		}
	}
	spans := make([]span, 0, len(sliding))
	for s := range sliding {
		spans = append(spans, s)
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.start - b.start) })
	for _, s := range spans {
		if st > s.end+grace {
			out = append(out, allstages.WindowResult{Kind: allstages.WindowSliding, Item: item, Start: s.start, End: s.end, Count: count(s.start, s.end, true)})
		}
	}

	// Sessions: records at most gap apart share one; [first, last],
	// closed once st > end + gap + grace.
	gap := allstages.SessionGap.Milliseconds()
	for i := 0; i < len(ts); {
		j := i
		for j+1 < len(ts) && ts[j+1]-ts[j] <= gap {
			j++
		}
		if st > ts[j]+gap+grace {
			out = append(out, allstages.WindowResult{Kind: allstages.WindowSession, Item: item, Start: ts[i], End: ts[j], Count: int64(j - i + 1)})
		}
		i = j + 1
	}
	return out
}

// Truth returns the truth of the plan (records, then closers).
func (p *AllStagesPlan) Truth(partitions int) (AllStagesTruth, error) {
	return SimulateAllStages(append(slices.Clone(p.Records), p.Closers...), partitions)
}
