package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/serde"
)

// Through writes the stream to topic, a topic of the user's, partitioned
// by the records' keys, and reads it back: what follows runs as a new
// sub-topology, as after Repartition (Kafka Streams' through, or
// repartition to a named topic). Unlike Repartition's internal topic the
// name is used as given, not prefixed with the application id, and other
// applications may read it too. The runtime creates the topic when missing
// with the partition count of the sub-topology that writes it, and uses an
// existing one as it is (its partition count, its configs; records are
// kept and deleted by its own retention, never purged by the runtime).
//
// Both legs are exactly-once: the write, and the offsets of the records
// read back, commit in the application's transactions like any output.
// The records keep their headers and timestamps, and their lineage names
// the original input record, not the topic.
func Through[K, V any](s Stream[K, V], topic string, kc serde.Codec[K], vc serde.Codec[V]) Stream[K, V] {
	if !s.valid("through " + topic) {
		return Stream[K, V]{}
	}
	t := s.t
	if err := checkTopic(topic); err != nil {
		t.errorf("through: %v", err)
	}
	for _, n := range t.nodes {
		if n.Kind == graph.KindSource && !n.Internal && n.Topic == topic && topic != "" {
			t.errorf("through: topic %q is read twice", topic)
		}
	}
	To(s, topic, kc, vc)
	sink := t.nodes[len(t.nodes)-1]
	sink.Through = true
	src := t.add(graph.KindSource, "source", "source-"+topic, nil)
	src.Topic = topic
	src.Through = true
	src.Splits = true
	if kc != nil && vc != nil {
		src.Format = kc.Name() + "/" + vc.Name()
		src.Decode = decoder(kc, vc)
	}
	return Stream[K, V]{t: t, node: src}
}

// checkLoops reports every topic that a sub-topology writes and that
// leads back to it: read by the same sub-topology, or by one whose
// outputs lead, topic by topic, to a sub-topology that reads it. A topic
// written by one sub-topology and read by another (Through, Repartition)
// is not a loop.
func (t *Topology) checkLoops() []error {
	g := graph.New(t.name, t.nodes)
	readers := map[string][]int{} // topic -> sub-topologies reading it
	for _, n := range t.nodes {
		if n.Kind == graph.KindSource && n.Topic != "" {
			readers[n.Topic] = append(readers[n.Topic], g.SubTopologyOfNode(n))
		}
	}
	next := map[int][]int{} // sub-topology -> sub-topologies reading its outputs
	for _, n := range t.nodes {
		if n.Kind == graph.KindSink {
			next[g.SubTopologyOfNode(n)] = append(next[g.SubTopologyOfNode(n)], readers[n.Topic]...)
		}
	}
	var errs []error
	reported := map[string]bool{}
	for _, n := range t.nodes {
		// An empty topic is already reported; it is not also a loop.
		if n.Kind != graph.KindSink || n.Topic == "" || reported[n.Topic] {
			continue
		}
		writer := g.SubTopologyOfNode(n)
		for _, reader := range readers[n.Topic] {
			path := pathTo(next, reader, writer)
			if path == nil {
				continue
			}
			reported[n.Topic] = true
			if len(path) == 1 {
				errs = append(errs, fmt.Errorf("topology: topic %q is both read and written: a loop", n.Topic))
				break
			}
			steps := make([]string, len(path)+1)
			for i, sub := range append(path, reader) {
				steps[i] = fmt.Sprint(sub)
			}
			errs = append(errs, fmt.Errorf("topology: topic %q is both read and written: a loop through sub-topologies %s", n.Topic, strings.Join(steps, " -> ")))
			break
		}
	}
	return errs
}

// pathTo returns the sub-topologies from one to another along next,
// both included, or nil when there is no path.
func pathTo(next map[int][]int, from, to int) []int {
	prev := map[int]int{from: from}
	queue := []int{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			path := []int{cur}
			for cur != from {
				cur = prev[cur]
				path = append(path, cur)
			}
			slices.Reverse(path)
			return path
		}
		for _, n := range next[cur] {
			if _, ok := prev[n]; !ok {
				prev[n] = cur
				queue = append(queue, n)
			}
		}
	}
	return nil
}
