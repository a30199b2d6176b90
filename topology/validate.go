package topology

// Validation: every problem of a topology at once, and its compilation
// for the runtime.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/internal/graph"
)

// checkTopic applies Kafka's rules for topic names.
func checkTopic(topic string) error {
	switch {
	case topic == "":
		return errors.New("topic name is empty")
	case topic == "." || topic == "..":
		return fmt.Errorf("topic name %q is not allowed", topic)
	case len(topic) > 249:
		return fmt.Errorf("topic name %q is longer than 249 characters", topic)
	}
	for _, r := range topic {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q has %q: only ASCII letters, digits, '.', '_' and '-' are allowed", topic, r)
		}
	}
	return nil
}

// checkName checks a stage's or store's name as the part of topic names
// it becomes: its error speaks of the name, not of a topic.
func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("name %q is not allowed", name)
	case len(name) > 200:
		return fmt.Errorf("name is %d characters, at most 200 (the topics it names need room for the application id)", len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("name has %q: only ASCII letters, digits, '.', '_' and '-' are allowed", r)
		}
	}
	return nil
}

// Validate returns every problem in the topology at once, or nil.
func (t *Topology) Validate() error {
	if t == nil {
		return errors.New("topology: nil topology")
	}
	errs := slices.Clone(t.errs)
	var sources, sinks int
	for _, n := range t.nodes {
		switch n.Kind {
		case graph.KindSource:
			sources++
		case graph.KindSink:
			sinks++
		case graph.KindProcessor:
			if len(n.Children) == 0 {
				// A dead end is allowed only if it can have effects; a plain
				// stateless stage that leads nowhere is a mistake.
				if n.Op != "process" && n.Op != "reduce" {
					errs = append(errs, fmt.Errorf("topology: %s %q leads nowhere: add an output with To", n.Op, n.Name))
				}
			}
		}
	}
	if sources == 0 {
		errs = append(errs, errors.New("topology: no source: add one with Source"))
	}
	errs = append(errs, t.checkStores()...)
	errs = append(errs, t.checkKeyedState()...)
	errs = append(errs, t.checkLoops()...)
	for _, n := range t.nodes {
		if n.Kind == graph.KindSource && len(n.Children) == 0 {
			errs = append(errs, fmt.Errorf("topology: source %q is not used", n.Topic))
		}
	}
	return errors.Join(errs...)
}

func init() {
	graph.RegisterCompiler(func(t any) (*graph.Graph, error) {
		tp, ok := t.(*Topology)
		if !ok || tp == nil {
			return nil, errors.New("topology: nil topology")
		}
		return tp.compile()
	})
}

// compile validates the topology and returns its executable form, for the
// runtime (through graph.Compile); users call Validate or Describe.
func (t *Topology) compile() (*graph.Graph, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return graph.New(t.name, t.nodes), nil
}

// checkKeyedState reports a stage keyed by the record key (Reduce, Count,
// Sum) that a key-changing stage feeds without a Repartition in between:
// records with one key could then be in different tasks, and each task
// would aggregate its own part.
func (t *Topology) checkKeyedState() []error {
	parents := map[*graph.Node][]*graph.Node{}
	for _, n := range t.nodes {
		for _, c := range n.Children {
			parents[c] = append(parents[c], n)
		}
	}
	var errs []error
	for _, n := range t.nodes {
		if !n.KeyedState {
			continue
		}
		if c := changerAbove(parents, n, map[*graph.Node]bool{}); c != nil {
			errs = append(errs, fmt.Errorf("topology: %s %q aggregates by key, but %s %q before it may change the key, so one key's records can be in different partitions: group with topology.GroupByKey or GroupBy, or add topology.Repartition(stream, name, keyCodec, valueCodec) between them", n.Op, n.Name, c.Op, c.Name))
		}
	}
	return errs
}

// checkStores reports stores shared across sub-topologies or kinds, and
// stores declared but passed to no stage.
func (t *Topology) checkStores() []error {
	var errs []error
	used := map[string]bool{}
	for _, n := range t.nodes {
		for _, st := range n.Stores {
			used[st.Name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.stores)) {
		if !used[name] {
			errs = append(errs, fmt.Errorf("topology: store %q is declared but no stage uses it: pass it to the Process that reads it, topology.Process(stream, name, fn, store)", name))
		}
	}
	g := graph.New(t.name, t.nodes)
	type use struct {
		sub  int
		kind graph.StoreKind
		node string
	}
	seen := map[string]use{}
	for _, n := range t.nodes {
		for _, st := range n.Stores {
			u := use{g.SubTopologyOfNode(n), st.Kind, n.Name}
			prev, ok := seen[st.Name]
			switch {
			case !ok:
				seen[st.Name] = u
			case prev.kind != u.kind:
				errs = append(errs, fmt.Errorf("topology: store name %q is used by %q and %q for different kinds of store", st.Name, prev.node, u.node))
			case prev.sub != u.sub:
				errs = append(errs, fmt.Errorf("topology: store %q is used by %q and %q in different sub-topologies: a store belongs to one", st.Name, prev.node, u.node))
			}
		}
	}
	return errs
}
