package verify

import (
	"maps"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/internal/graph"
)

// SpecOf is the outcome check of an application running g (its graph
// with the application id's prefix, graph.WithPrefix): its input topics,
// its output and outbox topics, which outputs are windowed, which inputs
// may drop records, and rejected, its rejected-records topic.
func SpecOf(g *graph.Graph, rejected string) Spec {
	spec := Spec{Rejected: rejected}
	for _, n := range g.Nodes {
		switch {
		case n.Kind == graph.KindSource && !n.Internal && !n.Through:
			spec.Inputs = append(spec.Inputs, n.Topic)
		case n.Kind == graph.KindSink && isOutput(n):
			spec.Outputs = append(spec.Outputs, n.Topic)
			if n.Outbox != nil {
				if spec.Ledgers == nil {
					spec.Ledgers = map[string]string{}
				}
				spec.Ledgers[n.Topic] = graph.LedgerTopic(n.Topic)
			}
		}
	}
	windowed := windowedTopics(g)
	spec.Windowed = slices.Sorted(func(yield func(string) bool) {
		for t := range windowed {
			if !yield(t) {
				return
			}
		}
	})
	for _, t := range spec.Inputs {
		if !alwaysReaches(g, g.Source(t), windowed, map[*graph.Node]bool{}) {
			spec.MayDrop = append(spec.MayDrop, t)
		}
		if most := atMost(g, g.Source(t), windowed, map[*graph.Node]bool{}); len(most) > 0 {
			for o, n := range most {
				if n < 0 {
					delete(most, o)
				}
			}
			if len(most) > 0 {
				if spec.AtMost == nil {
					spec.AtMost = map[string]map[string]int{}
				}
				spec.AtMost[t] = most
			}
		}
		reached := map[string]bool{}
		mustReach(g, g.Source(t), windowed, map[*graph.Node]bool{}, reached)
		if len(reached) > 0 {
			if spec.Required == nil {
				spec.Required = map[string][]string{}
			}
			spec.Required[t] = slices.Sorted(maps.Keys(reached))
		}
	}
	spec.Inputs = sortedUnique(spec.Inputs)
	spec.Outputs = sortedUnique(spec.Outputs)
	spec.MayDrop = sortedUnique(spec.MayDrop)
	return spec
}

// isOutput reports whether sink n writes a topic whose records are the
// application's outcomes: a user topic (a through topic too) or an outbox,
// not a repartition topic.
func isOutput(n *graph.Node) bool { return !n.Internal || n.Outbox != nil }

// mayDrop reports whether node n may forward nothing for a record it
// handles without rejecting it.
func mayDrop(n *graph.Node) bool {
	switch n.Op {
	case "filter", "flat-map", "process":
		return true
	}
	return isWindowed(n)
}

func isWindowed(n *graph.Node) bool { return strings.HasPrefix(n.Op, "windowed-") }

// next are the nodes a record handled by n goes on to: its children, and
// for a sink of a repartition or through topic the source reading it back.
func next(g *graph.Graph, n *graph.Node) []*graph.Node {
	if n.Kind == graph.KindSink && n.Outbox == nil && (n.Internal || n.Through) {
		if s := g.Source(n.Topic); s != nil {
			return append([]*graph.Node{s}, n.Children...)
		}
	}
	return n.Children
}

// windowedTopics are the output topics written downstream of a windowed
// aggregation.
func windowedTopics(g *graph.Graph) map[string]bool {
	out := map[string]bool{}
	seen := map[*graph.Node]bool{}
	var walk func(n *graph.Node)
	walk = func(n *graph.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.Kind == graph.KindSink && isOutput(n) {
			out[n.Topic] = true
		}
		for _, c := range next(g, n) {
			walk(c)
		}
	}
	for _, n := range g.Nodes {
		if isWindowed(n) {
			walk(n)
		}
	}
	return out
}

// alwaysReaches reports whether every record handled by n has an outcome
// that is not windowed: it reaches an output whatever the stages on its
// way do, or is rejected by one of them (a gate's rejection is an
// outcome).
func alwaysReaches(g *graph.Graph, n *graph.Node, windowed map[string]bool, onPath map[*graph.Node]bool) bool {
	if n == nil || onPath[n] {
		return false
	}
	if n.Kind == graph.KindSink && isOutput(n) && !windowed[n.Topic] {
		return true
	}
	if mayDrop(n) {
		return false
	}
	onPath[n] = true
	defer delete(onPath, n)
	for _, c := range next(g, n) {
		if alwaysReaches(g, c, windowed, onPath) {
			return true
		}
	}
	return false
}

// mustReach adds to reached the outputs that every record handled by n
// reaches unless a stage rejects it: every stage but those that may drop
// records forwards each record to all its children.
func mustReach(g *graph.Graph, n *graph.Node, windowed map[string]bool, onPath map[*graph.Node]bool, reached map[string]bool) {
	if n == nil || onPath[n] {
		return
	}
	if n.Kind == graph.KindSink && isOutput(n) && !windowed[n.Topic] {
		reached[n.Topic] = true
	}
	if mayDrop(n) {
		return
	}
	onPath[n] = true
	defer delete(onPath, n)
	for _, c := range next(g, n) {
		mustReach(g, c, windowed, onPath, reached)
	}
}

// atMost returns, per output topic, how many records one record handled
// by n writes there at most: one per path, -1 when a stage on a path may
// forward more than one record (flat-map, process).
func atMost(g *graph.Graph, n *graph.Node, windowed map[string]bool, onPath map[*graph.Node]bool) map[string]int {
	most := map[string]int{}
	if n == nil || onPath[n] {
		return most
	}
	if n.Kind == graph.KindSink && isOutput(n) && !windowed[n.Topic] {
		most[n.Topic] = 1
	}
	many := n.Op == "flat-map" || n.Op == "process"
	onPath[n] = true
	defer delete(onPath, n)
	for _, c := range next(g, n) {
		for t, m := range atMost(g, c, windowed, onPath) {
			if many || m < 0 || most[t] < 0 {
				most[t] = -1
			} else {
				most[t] += m
			}
		}
	}
	return most
}

func sortedUnique(ts []string) []string {
	slices.Sort(ts)
	return slices.Compact(ts)
}
