package topology

import (
	"fmt"
	"strings"

	"github.com/onceflow/onceflow/internal/graph"
)

// Describe prints the graph, one sub-topology at a time, followed by any
// validation problems.
func (t *Topology) Describe() string {
	if t == nil {
		return "topology <nil>\n  problems:\n    - " + t.Validate().Error() + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "topology %s\n", t.name)
	g := graph.New(t.name, t.nodes)
	for _, st := range g.SubTopologies {
		fmt.Fprintf(&b, "  sub-topology %d (sources: %s)\n", st.ID, strings.Join(st.SourceTopics, ", "))
		for _, n := range t.nodes {
			if n.Kind != graph.KindSource || g.SubTopologyOfNode(n) != st.ID {
				continue
			}
			describeNode(&b, n, 2)
		}
	}
	if err := t.Validate(); err != nil {
		fmt.Fprintf(&b, "  problems:\n")
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(&b, "    - %s\n", line)
		}
	}
	return b.String()
}

func describeNode(b *strings.Builder, n *graph.Node, depth int) {
	indent := strings.Repeat("  ", depth)
	switch n.Kind {
	case graph.KindSource:
		fmt.Fprintf(b, "%ssource %s <- topic %s [%s]%s\n", indent, n.Name, n.Topic, n.Format, linkNote(n))
	case graph.KindSink:
		if n.Outbox != nil {
			fmt.Fprintf(b, "%sexternal sink %s -> outbox %s, dead letters %s [%s]\n", indent, n.Outbox.Sink, n.Topic, graph.DLQTopic(n.Topic), n.Format)
			break
		}
		fmt.Fprintf(b, "%ssink %s -> topic %s [%s]%s\n", indent, n.Name, n.Topic, n.Format, linkNote(n))
	default:
		var stores []string
		for _, st := range n.Stores {
			stores = append(stores, st.Name)
		}
		if len(stores) > 0 {
			fmt.Fprintf(b, "%s%s %s (stores: %s)\n", indent, n.Op, n.Name, strings.Join(stores, ", "))
		} else {
			fmt.Fprintf(b, "%s%s %s\n", indent, n.Op, n.Name)
		}
	}
	for _, c := range n.Children {
		describeNode(b, c, depth+1)
	}
}

// linkNote marks the topics that link two sub-topologies: repartition
// topics (named after the application id at run time) and through topics.
func linkNote(n *graph.Node) string {
	switch {
	case n.Internal:
		return " (repartition)"
	case n.Through:
		return " (through)"
	}
	return ""
}
