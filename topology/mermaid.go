package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/internal/graph"
)

// DescribeMermaid returns the graph as a Mermaid flowchart: a subgraph per
// sub-topology with its nodes, every topic read or written (input, output,
// repartition, through, outbox and dead-letter topics) once, so that a
// topic written by one sub-topology and read by another joins them, the
// state stores each node uses, and each external sink with its outbox and
// dead-letter topics; gates (dedup, versions) point at the rejected-records
// topic, "<application id>-rejected". Paste it into a Markdown file between ```mermaid
// fences. Validation problems are listed as comments at the end.
func (t *Topology) DescribeMermaid() string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	if t == nil {
		b.WriteString("  %% topology <nil>\n")
		return b.String()
	}
	m := mermaid{b: &b, topics: map[string]string{}, stores: map[string]string{}}
	g := graph.New(t.name, t.nodes)
	for _, st := range g.SubTopologies {
		fmt.Fprintf(&b, "  subgraph st%d[%s]\n", st.ID, quote(fmt.Sprintf("sub-topology %d", st.ID)))
		for _, n := range t.nodes {
			if g.SubTopologyOfNode(n) == st.ID {
				fmt.Fprintf(&b, "    n%d%s\n", n.ID, m.shape(n))
			}
		}
		b.WriteString("  end\n")
	}
	for _, n := range t.nodes {
		m.edges(n)
	}
	m.declare()
	if err := t.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(&b, "  %%%% problem: %s\n", line)
		}
	}
	return b.String()
}

// mermaid collects the topics and stores of a flowchart as the edges name
// them, and declares them after the subgraphs.
type mermaid struct {
	b      *strings.Builder
	topics map[string]string // topic → its label
	order  []string          // topics, first-seen order
	stores map[string]string // store → its label
	sorder []string
	lines  []string // edges
}

// shape is a node's id suffix: its label in the shape of its kind.
func (m *mermaid) shape(n *graph.Node) string {
	switch n.Kind {
	case graph.KindSource:
		return "([" + quote("source "+n.Name) + "])"
	case graph.KindSink:
		if n.Outbox != nil {
			return "([" + quote("sink "+n.Name+" (outbox)") + "])"
		}
		return "([" + quote("sink "+n.Name) + "])"
	}
	return "[" + quote(n.Op+" "+n.Name) + "]"
}

func (m *mermaid) edges(n *graph.Node) {
	id := fmt.Sprintf("n%d", n.ID)
	switch n.Kind {
	case graph.KindSource:
		m.edge(m.topic(n.Topic, topicRole(n)), " --> ", id)
	case graph.KindSink:
		if o := n.Outbox; o != nil {
			out := m.topic(n.Topic, "outbox")
			m.edge(id, " --> ", out)
			ext := fmt.Sprintf("x%d", n.ID)
			m.lines = append(m.lines, fmt.Sprintf("  %s{{%s}}", ext, quote("external sink "+o.Sink)))
			m.edge(out, " -. delivered by the sink runner .-> ", ext)
			m.edge(ext, " -. dead letters .-> ", m.topic(graph.DLQTopic(n.Topic), "dead letters"))
			break
		}
		m.edge(id, " --> ", m.topic(n.Topic, topicRole(n)))
	}
	for _, st := range n.Stores {
		m.edge(id, " -.- ", m.store(st))
		if st.Kind == graph.StoreDedup || st.Kind == graph.StoreVersion {
			m.edge(id, " -. rejected .-> ", m.topic("<app>-rejected", "rejected records"))
		}
	}
	for _, c := range n.Children {
		m.edge(id, " --> ", fmt.Sprintf("n%d", c.ID))
	}
}

func (m *mermaid) edge(from, arrow, to string) {
	m.lines = append(m.lines, "  "+from+arrow+to)
}

// topicRole names what a source's or sink's topic is.
func topicRole(n *graph.Node) string {
	switch {
	case n.Internal:
		return "repartition"
	case n.Through:
		return "through"
	}
	return "topic"
}

// topic returns the id of a topic's node, declaring it on first use.
func (m *mermaid) topic(name, role string) string {
	if _, ok := m.topics[name]; !ok {
		m.topics[name] = role + " " + name
		m.order = append(m.order, name)
	}
	return fmt.Sprintf("t%d", slices.Index(m.order, name))
}

// store returns the id of a store's node, declaring it on first use.
func (m *mermaid) store(st graph.Store) string {
	if _, ok := m.stores[st.Name]; !ok {
		kind := map[graph.StoreKind]string{graph.StoreKeyValue: "key-value", graph.StoreDedup: "dedup", graph.StoreVersion: "versions", graph.StoreWindow: "window"}[st.Kind]
		m.stores[st.Name] = "store " + st.Name + " (" + kind + ")"
		m.sorder = append(m.sorder, st.Name)
	}
	return fmt.Sprintf("s%d", slices.Index(m.sorder, st.Name))
}

// declare writes the topic and store nodes, then the edges.
func (m *mermaid) declare() {
	for i, name := range m.order {
		fmt.Fprintf(m.b, "  t%d[/%s/]\n", i, quote(m.topics[name]))
	}
	for i, name := range m.sorder {
		fmt.Fprintf(m.b, "  s%d[(%s)]\n", i, quote(m.stores[name]))
	}
	for _, l := range m.lines {
		m.b.WriteString(l + "\n")
	}
}

// quote makes s a Mermaid label: in double quotes, with the characters
// Mermaid would read as syntax written as entities.
func quote(s string) string {
	return `"` + strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s) + `"`
}
