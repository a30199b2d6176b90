package verify_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// SpecOf reads what to check from the graph: inputs (not repartition or
// through topics), outputs (through and outbox topics too, with the
// application's prefix), the outputs downstream of a window, and the
// inputs whose every path may drop a record, and the outputs each input
// always reaches.
func TestSpecOf(t *testing.T) {
	hook := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
	t.Run("gates, an aggregate, a through topic and a sink: nothing may drop", func(t *testing.T) {
		tp := topology.New("payments")
		in := topology.Source(tp, "payments", serde.String(), serde.String())
		fresh := topology.Dedup(in, "dedup", topology.EventIDHeader("event-id"), time.Hour)
		back := topology.Through(fresh, "payments-through", serde.String(), serde.String())
		lens := topology.MapValues(back, func(v string) (int64, error) { return int64(len(v)), nil })
		totals := topology.Sum(lens, "balance", serde.String(), func(v int64) int64 { return v })
		topology.To(totals, "balances", serde.String(), serde.Int64())
		topology.ToSink(fresh, "hook", hook, serde.String(), nil)
		want := verify.Spec{
			Inputs:   []string{"payments"},
			Outputs:  []string{"app-sink-hook", "balances", "payments-through"},
			Rejected: "app-rejected",
			Required: map[string][]string{"payments": {"app-sink-hook", "balances", "payments-through"}},
			AtMost:   map[string]map[string]int{"payments": {"app-sink-hook": 1, "balances": 1, "payments-through": 1}},
			Ledgers:  map[string]string{"app-sink-hook": "app-sink-hook-ledger-changelog"},
		}
		checkSpec(t, tp, want)
	})
	t.Run("a filter, a window, a repartition", func(t *testing.T) {
		tp := topology.New("mixed")
		a := topology.Source(tp, "a", serde.String(), serde.String())
		b := topology.Source(tp, "b", serde.String(), serde.String())
		big := topology.Filter(a, func(_, v string) bool { return len(v) > 3 })
		topology.To(big, "big", serde.String(), serde.String())
		rekeyed := topology.Map(b, func(_, v string) (string, string, error) { return v, v, nil })
		counts := topology.GroupByKey(rekeyed, "by-value", serde.String(), serde.String()).
			WindowedBy(topology.TumblingWindows(time.Minute)).Count("per-minute")
		text := topology.Map(counts, func(k topology.Windowed[string], n int64) (string, string, error) {
			return k.Key, strconv.FormatInt(n, 10), nil
		})
		topology.To(text, "per-minute", serde.String(), serde.String())
		want := verify.Spec{
			Inputs:   []string{"a", "b"},
			Outputs:  []string{"big", "per-minute"},
			Windowed: []string{"per-minute"},
			Rejected: "app-rejected",
			MayDrop:  []string{"a", "b"},
			AtMost:   map[string]map[string]int{"a": {"big": 1}},
		}
		checkSpec(t, tp, want)
	})
	t.Run("a filter beside a path that keeps every record", func(t *testing.T) {
		tp := topology.New("beside")
		a := topology.Source(tp, "a", serde.String(), serde.String())
		topology.To(topology.Filter(a, func(_, v string) bool { return v != "" }), "some", serde.String(), serde.String())
		topology.To(a, "all", serde.String(), serde.String())
		checkSpec(t, tp, verify.Spec{Inputs: []string{"a"}, Outputs: []string{"all", "some"}, Rejected: "app-rejected",
			Required: map[string][]string{"a": {"all"}}, AtMost: map[string]map[string]int{"a": {"all": 1, "some": 1}}})
	})
	t.Run("a flat-map beside two paths to one topic", func(t *testing.T) {
		tp := topology.New("bounds")
		a := topology.Source(tp, "a", serde.String(), serde.String())
		topology.To(topology.FlatMap(a, func(k, v string) ([]topology.KeyValue[string, string], error) { return nil, nil }), "many", serde.String(), serde.String())
		upper := topology.MapValues(a, func(v string) (string, error) { return v, nil })
		topology.To(topology.Merge(a, upper), "twice", serde.String(), serde.String())
		checkSpec(t, tp, verify.Spec{Inputs: []string{"a"}, Outputs: []string{"many", "twice"}, Rejected: "app-rejected",
			Required: map[string][]string{"a": {"twice"}}, AtMost: map[string]map[string]int{"a": {"twice": 2}}})
	})
}

func checkSpec(t *testing.T, tp *topology.Topology, want verify.Spec) {
	t.Helper()
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	got := verify.SpecOf(g.WithPrefix("app"), "app-rejected")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spec\n got %+v\nwant %+v", got, want)
	}
}
