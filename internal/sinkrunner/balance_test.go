package sinkrunner_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// groupStable reports whether the group is stable (not rebalancing).
func groupStable(tb testing.TB, env *enginetest.Env, group string) bool {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	groups, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	return err == nil && groups[group].State == "Stable"
}

// groupAssignment returns the group's current assignment: member
// (instance id) → topic → partitions, sorted.
func groupAssignment(tb testing.TB, env *enginetest.Env, group string) map[string]map[string][]int32 {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	groups, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil {
		tb.Logf("describe group %s: %v", group, err)
		return nil
	}
	out := map[string]map[string][]int32{}
	for _, m := range groups[group].Members {
		id := m.MemberID
		if m.InstanceID != nil {
			id = *m.InstanceID
		}
		out[id] = map[string][]int32{}
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range c.Topics {
			ps := slices.Clone(t.Partitions)
			slices.Sort(ps)
			out[id][t.Topic] = ps
		}
	}
	return out
}

// formatAssignment prints an assignment as "a: line[0 1] tick[2]; b: ...",
// topics by the last part of their names.
func formatAssignment(a map[string]map[string][]int32) string {
	var out []string
	for _, m := range slices.Sorted(maps.Keys(a)) {
		var parts []string
		for _, t := range slices.Sorted(maps.Keys(a[m])) {
			parts = append(parts, fmt.Sprintf("%s%v", t[strings.LastIndex(t, "-")+1:], a[m][t]))
		}
		out = append(out, m+": "+strings.Join(parts, " "))
	}
	return strings.Join(out, "; ")
}

// twoSinks is a topology with two external sinks, "line" and "tick", as
// the allstages topology has.
func twoSinks(in string, s sinks.Sink) *topology.Topology {
	tp := topology.New("two")
	src := topology.Source(tp, in, serde.String(), serde.String())
	topology.ToSink(src, "line", s, serde.String(), nil)
	topology.ToSink(src, "tick", s, serde.String(), nil)
	return tp
}

// Three runners of a topology with two outboxes of 6 partitions each: one
// starts alone and takes all 12, two more join. Each outbox's partitions
// must be spread over the three (2 each): before, the group balanced only
// the total (4 each), and one runner could get 4 of one outbox's
// partitions and another only the other outbox's, so the busy outbox was
// delivered by fewer runners than there were.
func TestRunnerGroupBalancesEachOutbox(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("balance"), env.Name("in")
	line, tick := app+"-sink-line", app+"-sink-tick"
	env.CreateTopic(line, 6)
	env.CreateTopic(tick, 6)
	s := &effectSink{e: &effects{per: map[string]int{}, by: map[string]int{}}}
	group := app + "-sinks"
	settled := func(members ...string) func() bool {
		return func() bool {
			// Mid-rebalance, Kafka describes the new members beside the
			// old assignment: only a stable group's assignment counts.
			if !groupStable(t, env, group) {
				return false
			}
			a := groupAssignment(t, env, group)
			n := 0
			for _, m := range members {
				for _, ps := range a[m] {
					n += len(ps)
				}
			}
			return len(a) == len(members) && n == 12
		}
	}
	startRunner(t, env, app, "a", twoSinks(in, s))
	waitFor(t, "runner a holding every partition", 60*time.Second, settled("a"))
	startRunner(t, env, app, "b", twoSinks(in, s))
	startRunner(t, env, app, "c", twoSinks(in, s))
	waitFor(t, "three runners holding every partition", 60*time.Second, settled("a", "b", "c"))
	a := groupAssignment(t, env, group)
	t.Logf("assignment %s", formatAssignment(a))
	for _, topic := range []string{line, tick} {
		for _, m := range []string{"a", "b", "c"} {
			if n := len(a[m][topic]); n != 2 {
				t.Errorf("runner %s holds %d partitions of %s, want 2 of 6 (assignment %s)", m, n, topic, formatAssignment(a))
			}
		}
	}
}
