package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/onceflow/onceflow/examples/allstages"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/wire"
)

// Effect is one effect a receiver applied: the delivery's idempotency key
// and payload. A receiver that is not idempotent applies a re-sent key
// again: each application is one Effect.
type Effect struct {
	Key     string
	Payload []byte
	// Sender says who sent it (the runner's fence, the attempt), for the
	// examples of an effect applied twice. Optional.
	Sender string
}

// AllStagesOutputs is what the allstages topology wrote, read back
// read_committed, and the effects its sinks had.
type AllStagesOutputs struct {
	Web, App      []Record
	AccountCounts []Record
	ItemCounts    []Record
	Ticks         []Record
	Windows       []Record
	Rejected      []Record
	// Effects are the line-hook's and tick-hook's effects, in any order.
	Effects []Effect
	// Parked are the deliveries the sinks' ledgers hold parked, where an
	// operator sees them: unknown (`sinks unknown list`, the payload kept
	// in the ledger entry) or dead-lettered (`dlq list`, the dead
	// letter's payload). A missing effect whose payload is parked is
	// counted as parked, not missing. Optional.
	Parked []Effect
}

// ReadAllStages reads the topology's topics (prefix's, and the rejected
// topic) read_committed. The effects are the caller's to add.
func ReadAllStages(ctx context.Context, brokers []string, prefix, rejected string) (AllStagesOutputs, error) {
	tp := allstages.TopicsFor(prefix)
	var out AllStagesOutputs
	for _, r := range []struct {
		topic string
		into  *[]Record
	}{{tp.Web, &out.Web}, {tp.App, &out.App}, {tp.AccountCounts, &out.AccountCounts}, {tp.ItemCounts, &out.ItemCounts},
		{tp.Ticks, &out.Ticks}, {tp.Windows, &out.Windows}, {rejected, &out.Rejected}} {
		recs, err := ReadAll(ctx, brokers, r.topic)
		if err != nil {
			return out, err
		}
		*r.into = recs
	}
	return out, nil
}

// AllStagesReport compares the allstages outputs with the truth. Each
// Problems line is one kind of difference; OK when there are none.
// Missing things can still arrive (a run waits for them); doubled and
// unexpected ones never go away.
type AllStagesReport struct {
	Input, ExpectedInput int
	// Per output: values or results missing, doubled (seen more than
	// once) and unexpected (in no truth).
	AccountCounts, ItemCounts, Windows, LineEffects Diff
	// TickEffects compares the tick-hook's effects with the wall-clock
	// ticks read back (each once).
	TickEffects Diff
	// Rejected and ExpectedRejected count rejections by reason.
	Rejected, ExpectedRejected map[string]int
	// WallTicks and StreamTicks count the punctuators' outputs;
	// TickProblems lists what breaks their rules (a firing time not after
	// the previous one of its partition and kind, a tally going back, a
	// last wall-clock tally not equal to the partition's truth).
	WallTicks, StreamTicks int
	TickProblems           []string
	// KeyViolations counts effects applied for an idempotency key applied
	// before (at a receiver that is not idempotent).
	KeyViolations int
	Problems      []string
	OK            bool
}

// Diff counts what was missing, doubled or unexpected, with a few
// examples. For effects, Missing counts those missing and nowhere
// visible (lost); Parked those missing whose delivery is parked where an
// operator sees it (unknown or dead-lettered).
type Diff struct {
	Expected, Seen               int
	Missing, Doubled, Unexpected int
	Parked                       int      `json:",omitempty"`
	Examples                     []string `json:",omitempty"`
}

func (d *Diff) example(format string, args ...any) {
	if len(d.Examples) < 5 {
		d.Examples = append(d.Examples, fmt.Sprintf(format, args...))
	}
}

func (d Diff) String() string {
	parked := ""
	if d.Parked > 0 {
		parked = fmt.Sprintf(", parked %d", d.Parked)
	}
	return fmt.Sprintf("%d of %d (missing %d%s, doubled %d, unexpected %d) %v", d.Seen, d.Expected, d.Missing, parked, d.Doubled, d.Unexpected, d.Examples)
}

// Complete reports whether nothing is missing, parked deliveries
// included (what is doubled or unexpected may still be).
func (r AllStagesReport) Complete() bool {
	for _, d := range []Diff{r.AccountCounts, r.ItemCounts, r.Windows, r.LineEffects, r.TickEffects} {
		if d.Missing > 0 || d.Parked > 0 {
			return false
		}
	}
	return r.Input >= r.ExpectedInput && len(r.TickProblems) == 0 && fmt.Sprint(r.Rejected) == fmt.Sprint(r.ExpectedRejected)
}

// CheckAllStages compares out with truth.
func CheckAllStages(truth gen.AllStagesTruth, out AllStagesOutputs) AllStagesReport {
	rep := AllStagesReport{Input: len(out.Web) + len(out.App), ExpectedInput: truth.Input,
		ExpectedRejected: truth.Rejections, Rejected: map[string]int{}}
	rep.AccountCounts = checkCounts(out.AccountCounts, truth.AccountCounts)
	rep.ItemCounts = checkCounts(out.ItemCounts, truth.ItemCounts)
	rep.Windows = checkWindows(out.Windows, truth.Windows)
	for _, r := range out.Rejected {
		reason := r.Headers[wire.HeaderRejectReason]
		if reason == "" {
			reason = NoReason
		}
		rep.Rejected[reason]++
	}
	wall := checkTicks(&rep, out.Ticks, truth.Tally)
	rep.LineEffects, rep.TickEffects, rep.KeyViolations = checkEffects(out.Effects, out.Parked, truth.Lines, wall)

	if rep.Input != rep.ExpectedInput {
		rep.Problems = append(rep.Problems, fmt.Sprintf("input: %d records, the truth %d", rep.Input, rep.ExpectedInput))
	}
	for name, d := range map[string]Diff{"account counts": rep.AccountCounts, "item counts": rep.ItemCounts, "windows": rep.Windows,
		"line-hook effects": rep.LineEffects, "tick-hook effects": rep.TickEffects} {
		if d.Missing+d.Doubled+d.Unexpected > 0 {
			rep.Problems = append(rep.Problems, name+": "+d.String())
		}
	}
	if fmt.Sprint(rep.Rejected) != fmt.Sprint(rep.ExpectedRejected) {
		rep.Problems = append(rep.Problems, fmt.Sprintf("rejected %v, the truth %v", rep.Rejected, rep.ExpectedRejected))
	}
	rep.Problems = append(rep.Problems, rep.TickProblems...)
	if rep.KeyViolations > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d effects applied again for an idempotency key already applied", rep.KeyViolations))
	}
	sort.Strings(rep.Problems)
	rep.OK = len(rep.Problems) == 0
	return rep
}

// checkCounts holds a count output to the values 1..n once each per key.
func checkCounts(recs []Record, want map[string]int64) Diff {
	d := Diff{}
	seen := map[string]map[int64]int{}
	for _, r := range recs {
		n, err := allstages.DecodeCount(r.Value)
		if err != nil {
			d.Unexpected++
			d.example("%s: %v", r.Key, err)
			continue
		}
		k := string(r.Key)
		if seen[k] == nil {
			seen[k] = map[int64]int{}
		}
		seen[k][n]++
	}
	for k, n := range want {
		d.Expected += int(n)
		for v := int64(1); v <= n; v++ {
			switch c := seen[k][v]; {
			case c == 0:
				d.Missing++
				d.example("%s=%d missing", k, v)
			case c > 1:
				d.Doubled += c - 1
				d.example("%s=%d %d times", k, v, c)
			}
		}
	}
	for k, vs := range seen {
		for v, c := range vs {
			d.Seen += c
			if v < 1 || v > want[k] {
				d.Unexpected += c
				d.example("%s=%d unexpected", k, v)
			}
		}
	}
	return d
}

func checkWindows(recs []Record, want []allstages.WindowResult) Diff {
	d := Diff{Expected: len(want), Seen: len(recs)}
	seen := map[allstages.WindowResult]int{}
	for _, r := range recs {
		var w allstages.WindowResult
		if err := json.Unmarshal(r.Value, &w); err != nil {
			d.Unexpected++
			d.example("undecodable window result at %d/%d", r.Partition, r.Offset)
			continue
		}
		seen[w]++
	}
	expected := map[allstages.WindowResult]bool{}
	for _, w := range want {
		expected[w] = true
		switch c := seen[w]; {
		case c == 0:
			d.Missing++
			d.example("%+v missing", w)
		case c > 1:
			d.Doubled += c - 1
			d.example("%+v %d times", w, c)
		}
	}
	for w, c := range seen {
		if !expected[w] {
			d.Unexpected += c
			d.example("%+v unexpected", w)
		}
	}
	return d
}

// checkTicks holds each partition's ticks of each kind to strictly
// increasing firing times and non-decreasing tallies, and the last
// wall-clock tick to the partition's tally. It returns the wall-clock
// ticks, by their JSON.
func checkTicks(rep *AllStagesReport, recs []Record, tally map[int32]int64) map[string]int {
	type pk struct {
		p    int32
		kind string
	}
	last := map[pk]allstages.Tick{}
	wall := map[string]int{}
	for _, r := range recs {
		var tk allstages.Tick
		if err := json.Unmarshal(r.Value, &tk); err != nil {
			rep.TickProblems = append(rep.TickProblems, fmt.Sprintf("ticks: undecodable at %d/%d", r.Partition, r.Offset))
			continue
		}
		if tk.Kind == allstages.TickWall {
			rep.WallTicks++
			wall[string(r.Value)]++
		} else {
			rep.StreamTicks++
		}
		k := pk{tk.Partition, tk.Kind}
		if prev, ok := last[k]; ok && (tk.At <= prev.At || tk.Accepted < prev.Accepted) {
			rep.TickProblems = append(rep.TickProblems, fmt.Sprintf("ticks: partition %d %s tick %+v after %+v", tk.Partition, tk.Kind, tk, prev))
		}
		last[k] = tk
	}
	for p, n := range tally {
		if got := last[pk{p, allstages.TickWall}].Accepted; got != n {
			rep.TickProblems = append(rep.TickProblems, fmt.Sprintf("ticks: partition %d's last wall-clock tally %d, the truth %d", p, got, n))
		}
	}
	slices.Sort(rep.TickProblems)
	return wall
}

// checkEffects compares the effects with the lines of the truth and the
// wall-clock ticks read back, a missing one counted as parked when a
// parked delivery carries its payload; it counts the effects applied
// again for an idempotency key.
func checkEffects(effects, parked []Effect, lines []allstages.Line, wall map[string]int) (lineD, tickD Diff, keyViolations int) {
	parkedLines := map[allstages.Line]int{}
	parkedTicks := map[string]int{}
	for _, e := range parked {
		if strings.HasPrefix(e.Key, allstages.TickSink+":") {
			parkedTicks[string(e.Payload)]++
			continue
		}
		var l allstages.Line
		if json.Unmarshal(e.Payload, &l) == nil {
			parkedLines[l]++
		}
	}
	keys := map[string]int{}
	senders := map[string][]string{}
	gotLines := map[allstages.Line]int{}
	lineKeys := map[allstages.Line][]string{}
	gotTicks := map[string]int{}
	for _, e := range effects {
		keys[e.Key]++
		senders[e.Key] = append(senders[e.Key], e.Sender)
		if keys[e.Key] > 1 {
			keyViolations++
		}
		switch {
		case strings.HasPrefix(e.Key, allstages.TickSink+":"):
			gotTicks[string(e.Payload)]++
			tickD.Seen++
		default:
			var l allstages.Line
			if err := json.Unmarshal(e.Payload, &l); err != nil {
				lineD.Unexpected++
				lineD.example("undecodable effect %s", e.Key)
				continue
			}
			gotLines[l]++
			lineKeys[l] = append(lineKeys[l], e.Key)
			lineD.Seen++
		}
	}
	lineD.Expected = len(lines)
	want := map[allstages.Line]bool{}
	for _, l := range lines {
		want[l] = true
		switch c := gotLines[l]; {
		case c == 0 && parkedLines[l] > 0:
			lineD.Parked++
		case c == 0:
			lineD.Missing++
			lineD.example("%s#%d missing", l.EventID, l.Index)
		case c > 1:
			lineD.Doubled += c - 1
			var by []string
			for _, k := range slices.Compact(slices.Sorted(slices.Values(lineKeys[l]))) {
				by = append(by, fmt.Sprintf("%s by %v", k, senders[k]))
			}
			lineD.example("%s#%d applied %d times: %s", l.EventID, l.Index, c, strings.Join(by, "; "))
		}
	}
	for l, c := range gotLines {
		if !want[l] {
			lineD.Unexpected += c
			lineD.example("%s#%d unexpected", l.EventID, l.Index)
		}
	}
	for p, n := range wall {
		tickD.Expected += n
		switch c := gotTicks[p]; {
		case c < n:
			parked := min(n-c, parkedTicks[p])
			tickD.Parked += parked
			if lost := n - c - parked; lost > 0 {
				tickD.Missing += lost
				tickD.example("tick %s missing", p)
			}
		case c > n:
			tickD.Doubled += c - n
			tickD.example("tick %s applied %d times", p, c)
		}
	}
	for p, c := range gotTicks {
		if wall[p] == 0 {
			tickD.Unexpected += c
			tickD.example("tick %s in no committed tick", p)
		}
	}
	return lineD, tickD, keyViolations
}
