package allstages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/onceflow/onceflow/examples/allstages"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// TestTopologyMatchesTheTruth runs a generated input through the topology
// in-process and compares every output with the generator's truth: count
// outputs 1..n once per key, one delivery per line, every closed window's
// count, the rejections by reason, and the wall-clock ticks ending at each
// partition's tally.
func TestTopologyMatchesTheTruth(t *testing.T) {
	const parts = 6
	wall := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	plan, err := gen.PlanAllStages(gen.AllStagesConfig{Events: 800, Partitions: parts, Seed: 7, Start: wall.Add(-30 * time.Minute), Rate: 200})
	if err != nil {
		t.Fatal(err)
	}
	truth, err := plan.Truth(parts)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Duplicates == 0 || plan.Conflicts == 0 || plan.OutOfOrder == 0 || plan.Late == 0 {
		t.Fatalf("plan injected too little: %+v", plan)
	}
	none := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
	tp := allstages.TopicsFor("as")
	d, err := topologytest.New(allstages.Topology("as", allstages.Sinks{Lines: none, Ticks: none}),
		topologytest.Config{Partitions: parts, WallClock: wall})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	web := topologytest.Input(d, tp.Web, serde.String(), serde.Bytes())
	app := topologytest.Input(d, tp.App, serde.String(), serde.Bytes())
	for i, r := range append(slices.Clone(plan.Records), plan.Closers...) {
		in := web
		if r.App {
			in = app
		}
		h := topology.Headers{{Key: "event-id", Value: []byte(r.EventID)}}
		if err := in.PipeRaw([]byte(r.Key), r.Value, h, r.At, wire.Partition([]byte(r.Key), 0, parts)); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			if err := d.AdvanceWallClock(allstages.WallInterval); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.AdvanceWallClock(allstages.WallInterval); err != nil {
		t.Fatal(err)
	}

	checkCounts := func(topic string, want map[string]int64) {
		t.Helper()
		rs, err := topologytest.Output(d, topic, serde.String(), serde.Int64()).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]int64{}
		for _, r := range rs {
			got[r.Key] = append(got[r.Key], r.Value)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d keys, want %d", topic, len(got), len(want))
		}
		for k, n := range want {
			if vs := got[k]; int64(len(vs)) != n || vs[len(vs)-1] != n {
				t.Errorf("%s: key %s counted %v, want 1..%d", topic, k, vs, n)
			}
		}
	}
	checkCounts(tp.AccountCounts, truth.AccountCounts)
	checkCounts(tp.ItemCounts, truth.ItemCounts)

	outbox, err := topologytest.Output(d, topologytest.OutboxTopic(allstages.LineSink), serde.String(), serde.JSON[allstages.Line]()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var lines []allstages.Line
	for _, r := range outbox {
		k, _ := r.Headers.Get(sinks.HeaderIdempotencyKey)
		if keys[string(k)] {
			t.Errorf("idempotency key %s twice", k)
		}
		keys[string(k)] = true
		lines = append(lines, r.Value)
	}
	byID := func(a, b allstages.Line) int {
		if a.EventID != b.EventID {
			return cmpString(a.EventID, b.EventID)
		}
		return a.Index - b.Index
	}
	slices.SortFunc(lines, byID)
	want := slices.Clone(truth.Lines)
	slices.SortFunc(want, byID)
	if !slices.Equal(lines, want) {
		t.Errorf("line-hook: %d deliveries, want %d", len(lines), len(want))
	}

	wrs, err := topologytest.Output(d, tp.Windows, serde.String(), serde.JSON[allstages.WindowResult]()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	gotW := map[allstages.WindowResult]int{}
	for _, r := range wrs {
		gotW[r.Value]++
	}
	wantW := map[allstages.WindowResult]int{}
	for _, w := range truth.Windows {
		wantW[w]++
	}
	for w, n := range wantW {
		if gotW[w] != n {
			t.Errorf("window %+v: %d results, want %d", w, gotW[w], n)
		}
	}
	for w, n := range gotW {
		if wantW[w] == 0 {
			t.Errorf("window %+v: %d results, not in the truth", w, n)
		}
	}
	kinds := map[string]int{}
	for _, w := range truth.Windows {
		kinds[w.Kind]++
	}
	for _, k := range allstages.WindowKinds {
		if kinds[k] == 0 {
			t.Errorf("no %s window closed", k)
		}
	}

	rejected := map[string]int{}
	for _, r := range d.Rejections() {
		rejected[r.Reason]++
	}
	if fmt.Sprint(rejected) != fmt.Sprint(truth.Rejections) {
		t.Errorf("rejections %v, want %v", rejected, truth.Rejections)
	}

	ticks, err := topologytest.Output(d, tp.Ticks, serde.String(), serde.JSON[allstages.Tick]()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	lastWall := map[int32]int64{}
	streams := 0
	for _, r := range ticks {
		if r.Value.Kind == allstages.TickWall {
			lastWall[r.Value.Partition] = r.Value.Accepted
		} else {
			streams++
		}
	}
	if fmt.Sprint(lastWall) != fmt.Sprint(truth.Tally) {
		t.Errorf("last wall-clock ticks %v, want the tallies %v", lastWall, truth.Tally)
	}
	if streams == 0 {
		t.Error("no stream-time tick")
	}
	var tickDeliveries int
	tickOutbox, err := topologytest.Output(d, topologytest.OutboxTopic(allstages.TickSink), serde.String(), serde.JSON[allstages.Tick]()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tickOutbox {
		if r.Value.Kind != allstages.TickWall {
			t.Errorf("tick-hook got a %s tick", r.Value.Kind)
		}
		tickDeliveries++
	}
	if tickDeliveries != len(ticks)-streams {
		t.Errorf("tick-hook: %d deliveries for %d wall-clock ticks", tickDeliveries, len(ticks)-streams)
	}
	t.Logf("%d records, %d accepted, %d lines, %d windows, rejections %v, %d ticks", truth.Input, truth.Accepted, len(truth.Lines), len(truth.Windows), truth.Rejections, len(ticks))
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestTopologyValidates(t *testing.T) {
	none := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
	if err := allstages.Topology("x", allstages.Sinks{Lines: none, Ticks: none}).Validate(); err != nil {
		t.Fatal(err)
	}
	var e allstages.Event
	if err := json.Unmarshal([]byte(`{"id":"a","account":"b","order":"c"}`), &e); err != nil {
		t.Fatal(err)
	}
}
