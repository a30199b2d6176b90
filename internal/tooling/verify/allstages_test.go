package verify

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/onceflow/onceflow/examples/allstages"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/wire"
)

// allStagesOutputs builds outputs exactly as the truth wants them.
func allStagesOutputs(t *testing.T, plan *gen.AllStagesPlan, truth gen.AllStagesTruth) AllStagesOutputs {
	t.Helper()
	var out AllStagesOutputs
	for _, r := range append(slices.Clone(plan.Records), plan.Closers...) {
		rec := Record{Key: []byte(r.Key), Value: r.Value}
		if r.App {
			out.App = append(out.App, rec)
		} else {
			out.Web = append(out.Web, rec)
		}
	}
	counts := func(m map[string]int64) []Record {
		var rs []Record
		for k, n := range m {
			for v := int64(1); v <= n; v++ {
				rs = append(rs, Record{Key: []byte(k), Value: binary.BigEndian.AppendUint64(nil, uint64(v))})
			}
		}
		return rs
	}
	out.AccountCounts, out.ItemCounts = counts(truth.AccountCounts), counts(truth.ItemCounts)
	for _, w := range truth.Windows {
		b, _ := json.Marshal(w)
		out.Windows = append(out.Windows, Record{Key: []byte(w.Item), Value: b})
	}
	for reason, n := range truth.Rejections {
		for range n {
			out.Rejected = append(out.Rejected, Record{Headers: map[string]string{wire.HeaderRejectReason: reason}})
		}
	}
	for i, l := range truth.Lines {
		b, _ := json.Marshal(l)
		out.Effects = append(out.Effects, Effect{Key: fmt.Sprintf("%s:lines/0/%d", allstages.LineSink, i), Payload: b})
	}
	for p, n := range truth.Tally {
		for i, v := range []int64{n / 2, n} {
			b, _ := json.Marshal(allstages.Tick{Kind: allstages.TickWall, Partition: p, Accepted: v, At: int64(1000 * (i + 1))})
			out.Ticks = append(out.Ticks, Record{Value: b})
			out.Effects = append(out.Effects, Effect{Key: fmt.Sprintf("%s:punctuator/tally/%d/%d", allstages.TickSink, p, i), Payload: b})
		}
	}
	return out
}

// TestAllStagesVerdict: outputs equal to the truth pass; a doubled count,
// a doubled window, a doubled effect (same key applied twice), a lost
// effect, a tally going back and a missing rejection each fail it.
func TestAllStagesVerdict(t *testing.T) {
	plan, err := gen.PlanAllStages(gen.AllStagesConfig{Events: 800, Seed: 3, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Rate: 100})
	if err != nil {
		t.Fatal(err)
	}
	truth, err := plan.Truth(6)
	if err != nil {
		t.Fatal(err)
	}
	if rep := CheckAllStages(truth, allStagesOutputs(t, plan, truth)); !rep.OK || !rep.Complete() {
		t.Fatalf("outputs equal to the truth: %v", rep.Problems)
	}
	for _, tc := range []struct {
		name  string
		spoil func(*AllStagesOutputs)
		check func(AllStagesReport) bool
	}{
		{"doubled account count", func(o *AllStagesOutputs) { o.AccountCounts = append(o.AccountCounts, o.AccountCounts[3]) },
			func(r AllStagesReport) bool { return r.AccountCounts.Doubled == 1 && r.Complete() }},
		{"doubled window", func(o *AllStagesOutputs) { o.Windows = append(o.Windows, o.Windows[0]) },
			func(r AllStagesReport) bool { return r.Windows.Doubled == 1 }},
		{"effect applied twice", func(o *AllStagesOutputs) { o.Effects = append(o.Effects, o.Effects[5]) },
			func(r AllStagesReport) bool { return r.KeyViolations == 1 && r.LineEffects.Doubled == 1 }},
		{"effect lost", func(o *AllStagesOutputs) { o.Effects = o.Effects[1:] },
			func(r AllStagesReport) bool { return r.LineEffects.Missing == 1 && !r.Complete() }},
		{"tick effect twice under two keys", func(o *AllStagesOutputs) {
			e := o.Effects[len(o.Effects)-1]
			e.Key += "-again"
			o.Effects = append(o.Effects, e)
		}, func(r AllStagesReport) bool { return r.TickEffects.Doubled == 1 && r.KeyViolations == 0 }},
		{"tally going back", func(o *AllStagesOutputs) {
			var tk allstages.Tick
			_ = json.Unmarshal(o.Ticks[0].Value, &tk)
			tk.At, tk.Accepted = 5000, 0
			b, _ := json.Marshal(tk)
			o.Ticks = append(o.Ticks, Record{Value: b})
		}, func(r AllStagesReport) bool { return len(r.TickProblems) == 2 }},
		{"rejection missing", func(o *AllStagesOutputs) { o.Rejected = o.Rejected[1:] },
			func(r AllStagesReport) bool { return !r.Complete() }},
	} {
		out := allStagesOutputs(t, plan, truth)
		tc.spoil(&out)
		rep := CheckAllStages(truth, out)
		if rep.OK || !tc.check(rep) {
			t.Errorf("%s: OK %t, problems %v", tc.name, rep.OK, rep.Problems)
		}
	}
	// A missing effect whose delivery is parked where an operator sees it
	// is parked, not lost: no problem, but not complete either. A parked
	// delivery with another payload does not hide a lost one.
	for _, tc := range []struct {
		name         string
		spoil        func(*AllStagesOutputs)
		ok           bool
		lines, ticks Diff
	}{
		{"line effect parked", func(o *AllStagesOutputs) { o.Parked, o.Effects = o.Effects[:1], o.Effects[1:] }, true,
			Diff{Parked: 1}, Diff{}},
		{"tick effect parked", func(o *AllStagesOutputs) {
			n := len(o.Effects) - 1
			o.Parked, o.Effects = o.Effects[n:], o.Effects[:n]
		}, true, Diff{}, Diff{Parked: 1}},
		{"another payload parked", func(o *AllStagesOutputs) {
			p := o.Effects[1]
			o.Parked, o.Effects = []Effect{p}, o.Effects[2:]
			o.Effects = append(o.Effects, p)
		}, false, Diff{Missing: 1}, Diff{}},
	} {
		out := allStagesOutputs(t, plan, truth)
		tc.spoil(&out)
		rep := CheckAllStages(truth, out)
		l, k := rep.LineEffects, rep.TickEffects
		if rep.OK != tc.ok || rep.Complete() || l.Missing != tc.lines.Missing || l.Parked != tc.lines.Parked ||
			k.Missing != tc.ticks.Missing || k.Parked != tc.ticks.Parked {
			t.Errorf("%s: OK %t, complete %t, line effects %v, tick effects %v; want OK %t, lines %v, ticks %v",
				tc.name, rep.OK, rep.Complete(), l, k, tc.ok, tc.lines, tc.ticks)
		}
	}
}
