// Package graph is the executable form of a topology: the nodes the runtime
// pushes records through. The public topology package builds it; the
// runtime runs it. Keys and values travel boxed between nodes; each node's
// closures know the concrete types.
package graph

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/onceflow/onceflow/internal/wire"
)

// Kind says what a node does.
type Kind int

const (
	KindSource Kind = iota
	KindProcessor
	KindSink
)

func (k Kind) String() string {
	switch k {
	case KindSource:
		return "source"
	case KindProcessor:
		return "processor"
	case KindSink:
		return "sink"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Header is one record header. It is defined in the leaf package record,
// which the Kafka seam uses without importing the graph.
type Header = wire.Header

// Record is a record in flight between nodes.
type Record struct {
	Key       any
	Value     any
	Headers   []Header
	Timestamp time.Time
}

// Input names the consumed record a record in flight descends from.
type Input struct {
	Topic     string
	Partition int32
	Offset    int64
	Headers   []Header
	Value     []byte // the consumed value bytes (for payload hashes)
	Timestamp time.Time
}

// Emitter is the runtime's side of one input record's processing: it
// buffers the encoded outputs of sink nodes and the rejections of gates,
// and can roll them back, with the state the record staged, to a mark.
type Emitter interface {
	// Emit buffers one encoded output.
	Emit(topic string, key, value []byte, headers []Header, ts time.Time) error
	// Reject buffers the rejection of one record in flight: the runtime
	// writes the input record to the rejected-records topic with the
	// rejection's reason and node.
	Reject(rej *Rejection) error
	// Mark returns a savepoint of what was emitted, rejected and staged so
	// far for the current input record.
	Mark() Mark
	// Rollback undoes everything emitted, rejected and staged after m.
	Rollback(m Mark)
}

// Mark is a savepoint of one input record's processing: how many outputs,
// rejections and state writes it had buffered. The runtime fills it in.
type Mark struct {
	Outputs, Rejections, State int
}

// Node is one vertex of the graph.
type Node struct {
	ID       int
	Name     string
	Kind     Kind
	Op       string // map, filter, flat-map, process, ... (for Describe)
	Topic    string // sources and sinks
	Format   string // key and value codecs, for Describe
	Children []*Node

	// Decode turns consumed bytes into the source's key and value.
	Decode func(key, value []byte) (k, v any, err error)
	// Process handles one record; it forwards results with Context.Forward.
	Process func(c *Context, r Record) error
	// Encode turns a sink's key and value into bytes.
	Encode func(k, v any) (key, value []byte, err error)
	// Stores are the state stores Process uses.
	Stores []Store
	// Internal marks the sink and source of a repartition topic; Topic is
	// then the name without the application id, which WithPrefix adds.
	Internal bool
	// Through marks the sink and source of a user topic the application
	// writes and reads back (topology.Through). Unlike an internal topic
	// its name is the user's, as given.
	Through bool
	// Splits marks a node that may forward more than one record per
	// record it handles (sources, flat-map, process): each record it
	// forwards is a unit of rejection of its own (see Context.Forward).
	Splits bool
	// ChangesKey marks a node whose output records may have other keys
	// than its input (map, flat-map, process).
	ChangesKey bool
	// KeyedState marks a node whose state is keyed by the record key
	// (reduce, count, sum): it needs all records of a key in one task.
	KeyedState bool
	// Outbox marks a sink that writes delivery requests for an external
	// sink (an internal topic): see Outbox.
	Outbox *Outbox
	// Timers are the node's punctuators (see Timer).
	Timers []Timer
}

// SubTopology is a connected part of the graph. Its source topics must be
// co-partitioned; a task is one sub-topology on one partition.
type SubTopology struct {
	ID           int
	SourceTopics []string
	SinkTopics   []string
	Stores       []Store
}

// Graph is a validated topology.
type Graph struct {
	Name          string
	Nodes         []*Node
	SubTopologies []SubTopology

	sources map[string]*Node
	subOf   map[string]int
	nodeSub []int // sub-topology of each node, by Node.ID
}

// New indexes nodes into a graph. Nodes must already be valid.
func New(name string, nodes []*Node) *Graph {
	g := &Graph{Name: name, Nodes: nodes, sources: map[string]*Node{}, subOf: map[string]int{}, nodeSub: make([]int, len(nodes))}
	parent := make([]int, len(nodes))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, n := range nodes {
		for _, c := range n.Children {
			parent[find(n.ID)] = find(c.ID)
		}
	}
	roots := map[int]int{}
	for _, n := range nodes {
		r := find(n.ID)
		id, ok := roots[r]
		if !ok {
			id = len(g.SubTopologies)
			roots[r] = id
			g.SubTopologies = append(g.SubTopologies, SubTopology{ID: id})
		}
		g.nodeSub[n.ID] = id
		st := &g.SubTopologies[id]
		switch n.Kind {
		case KindSource:
			g.sources[n.Topic] = n
			g.subOf[n.Topic] = id
			st.SourceTopics = append(st.SourceTopics, n.Topic)
		case KindSink:
			if !slices.Contains(st.SinkTopics, n.Topic) {
				st.SinkTopics = append(st.SinkTopics, n.Topic)
			}
		}
		for _, s := range n.Stores {
			if !slices.ContainsFunc(st.Stores, func(o Store) bool { return o.Name == s.Name }) {
				st.Stores = append(st.Stores, s)
			}
		}
	}
	return g
}

// WithPrefix returns a copy of the graph in which internal topics are
// named "<prefix>-<topic>". The nodes are copied, so one topology can back
// runtimes with different application ids.
func (g *Graph) WithPrefix(prefix string) *Graph {
	copies := make([]*Node, len(g.Nodes))
	for i, n := range g.Nodes {
		c := *n
		if c.Internal {
			c.Topic = prefix + "-" + c.Topic
		}
		copies[i] = &c
	}
	for _, c := range copies {
		children := make([]*Node, len(c.Children))
		for i, ch := range c.Children {
			children[i] = copies[ch.ID]
		}
		c.Children = children
	}
	return New(g.Name, copies)
}

// InternalTopics lists the repartition topics, sorted.
func (g *Graph) InternalTopics() []string {
	return g.sourcesWhere(func(n *Node) bool { return n.Internal })
}

// ThroughTopics lists the user topics the application writes and reads
// back (topology.Through), sorted.
func (g *Graph) ThroughTopics() []string {
	return g.sourcesWhere(func(n *Node) bool { return n.Through })
}

// sourcesWhere lists, sorted, the topics of the sources for which keep
// returns true.
func (g *Graph) sourcesWhere(keep func(*Node) bool) []string {
	var ts []string
	for _, n := range g.Nodes {
		if n.Kind == KindSource && keep(n) {
			ts = append(ts, n.Topic)
		}
	}
	slices.Sort(ts)
	return ts
}

// LinkTopics lists the topics that hand records from one sub-topology of
// the application to another (repartition and through topics), sorted.
// Records read from them carry the lineage of the input record they
// descend from.
func (g *Graph) LinkTopics() []string {
	ts := append(g.InternalTopics(), g.ThroughTopics()...)
	slices.Sort(ts)
	return ts
}

// WriterOf returns the sub-topology whose sink writes topic, or -1.
func (g *Graph) WriterOf(topic string) int {
	for _, n := range g.Nodes {
		if n.Kind == KindSink && n.Topic == topic {
			return g.nodeSub[n.ID]
		}
	}
	return -1
}

// Stores lists every store with the sub-topology that uses it.
func (g *Graph) Stores() map[string]int {
	out := map[string]int{}
	for _, st := range g.SubTopologies {
		for _, s := range st.Stores {
			out[s.Name] = st.ID
		}
	}
	return out
}

// Stateful reports whether any node uses a store.
func (g *Graph) Stateful() bool {
	for _, st := range g.SubTopologies {
		if len(st.Stores) > 0 {
			return true
		}
	}
	return false
}

// Source returns the source node reading topic, or nil.
func (g *Graph) Source(topic string) *Node { return g.sources[topic] }

// SubTopologyOf returns the sub-topology a source topic belongs to.
func (g *Graph) SubTopologyOf(topic string) int { return g.subOf[topic] }

// SubTopologyOfNode returns the sub-topology node belongs to. Unlike
// SubTopologyOf it stays right when a topic is read twice (an invalid
// topology that Describe still prints).
func (g *Graph) SubTopologyOfNode(n *Node) int { return g.nodeSub[n.ID] }

// SourceTopics lists every source topic, sorted.
func (g *Graph) SourceTopics() []string {
	var ts []string
	for t := range g.sources {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// SinkTopics lists every sink topic, sorted, without repeats.
func (g *Graph) SinkTopics() []string {
	var ts []string
	for _, n := range g.Nodes {
		if n.Kind == KindSink && !slices.Contains(ts, n.Topic) {
			ts = append(ts, n.Topic)
		}
	}
	slices.Sort(ts)
	return ts
}

// Context is what a node sees while it handles a record.
type Context struct {
	node  *Node
	input *Input
	out   Emitter
	state State
	// failed is the first processing error of the input record. It fails
	// the whole record even when a Process function ignores the error its
	// Forward returned.
	failed error
	// outboxSeq counts the processing's deliveries per outbox node.
	outboxSeq []outboxCount
	// punct is set while a timer runs (Punctuate).
	punct punctuation
	// originKey caches origin.
	originKey string
}

// State returns the task's state, or nil when the graph has no stores.
func (c *Context) State() State { return c.state }

// Input returns the consumed record being processed.
func (c *Context) Input() *Input { return c.input }

// Node returns the node handling the record.
func (c *Context) Node() *Node { return c.node }

// Forward sends r to every child of the current node.
//
// The unit of rejection is one record as it flows. When a gate rejects a
// record, the rejection travels back up the record's path to the nearest
// node that split it off (the source, a flat-map, a process, or a node with
// several children). There everything the rejected record's own path
// emitted and staged since it was forwarded is rolled back, the rejection
// is recorded, and its siblings flow on: a rejection never leaves state
// that claims an output was produced when it was not, and never drops a
// sibling's output. Any other error fails the whole input record.
func (c *Context) Forward(r Record) error {
	if c.failed != nil {
		return c.failed
	}
	node := c.node
	defer func() { c.node = node }()
	split := node.Splits || len(node.Children) > 1
	for _, child := range node.Children {
		c.node = child
		var m Mark
		if split {
			m = c.out.Mark()
		}
		err := c.deliver(r)
		if err == nil {
			continue
		}
		if rej, ok := errors.AsType[*Rejection](err); ok && split && c.failed == nil {
			c.out.Rollback(m)
			if err := c.out.Reject(rej); err != nil {
				c.fail(err)
				return err
			}
			continue
		}
		if _, ok := errors.AsType[*Rejection](err); !ok {
			c.fail(err)
		}
		return err
	}
	return nil
}

// ForwardAlone forwards r as Forward does, as a unit of its own even when
// its path fails: an error other than a rejection rolls back what r's path
// emitted and staged and is recorded as a rejection (processing-error, or
// the reason a Reasoned error names) described by what, carrying the
// error, instead of failing the record being handled. A node
// forwards so what the record being handled did not cause, such as the
// final result of a window its stream time closed: failing that record
// would roll the close back and fail every later record the same way.
func (c *Context) ForwardAlone(r Record, what string) error {
	return c.ForwardAloneAs(r, what, nil)
}

// ForwardAloneAs is ForwardAlone whose rejection, when r's path fails, is
// of the record as (nil: the input record being handled). A node passes
// what it forwards in the encoding a reader of the rejected-records topic
// can use, when that is not the input record.
func (c *Context) ForwardAloneAs(r Record, what string, as *RejectedRecord) error {
	if c.failed != nil {
		return c.failed
	}
	m := c.out.Mark()
	err := c.Forward(r)
	if err == nil || c.failed == nil {
		return err // a rejection the node's parent handles
	}
	if IsUnavailable(err) {
		return err // an outage fails the record being handled, never rejects
	}
	c.failed = nil
	c.out.Rollback(m)
	rej := &Rejection{Reason: wire.ReasonProcessingError, Detail: what + ": " + err.Error(), Node: c.node.Name, Err: err, Record: as}
	if ne, ok := errors.AsType[*NodeError](err); ok {
		rej.Node = ne.Node
	}
	if re, ok := errors.AsType[Reasoned](err); ok {
		rej.Reason = re.RejectReason()
	}
	if err := c.out.Reject(rej); err != nil {
		c.fail(err)
		return err
	}
	return nil
}

// fail records the input record's first processing error.
func (c *Context) fail(err error) {
	if c.failed == nil {
		c.failed = err
	}
}

func (c *Context) deliver(r Record) error {
	n := c.node
	switch n.Kind {
	case KindSink:
		k, v, err := n.Encode(r.Key, r.Value)
		if err != nil {
			return &NodeError{Node: n.Name, Err: err}
		}
		headers := r.Headers
		if n.Outbox != nil {
			if headers, err = c.outboxHeaders(n, r); err != nil {
				return &NodeError{Node: n.Name, Err: err}
			}
		}
		return c.out.Emit(n.Topic, k, v, headers, r.Timestamp)
	default:
		err := n.Process(c, r)
		if err == nil {
			return nil
		}
		if rej, ok := errors.AsType[*Rejection](err); ok {
			if rej.Node == "" {
				rej.Node = n.Name
			}
			return rej
		}
		if _, ok := errors.AsType[*NodeError](err); ok {
			return err
		}
		return &NodeError{Node: n.Name, Err: err}
	}
}

// Run pushes one decoded record from source through a graph without
// state (the runtime keeps a Context and calls its Run method).
func Run(source *Node, in *Input, r Record, out Emitter) error {
	var c Context
	return c.Run(source, in, r, out, nil)
}

// Run pushes one decoded record from source through the graph, reusing c
// (the runtime keeps one per driver instead of one per record). An error
// fails the whole input record: the runtime drops everything it emitted,
// rejected and staged. Rejections of gates are not errors: they come to
// out.Reject.
func (c *Context) Run(source *Node, in *Input, r Record, out Emitter, st State) error {
	*c = Context{node: source, input: in, out: out, state: st, outboxSeq: c.outboxSeq[:0]}
	err := c.Forward(r)
	if _, ok := errors.AsType[*Rejection](err); err == nil || ok && c.failed != nil {
		return c.failed
	}
	return err
}

// NodeError says which node failed.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return fmt.Sprintf("node %q: %v", e.Node, e.Err) }
func (e *NodeError) Unwrap() error { return e.Err }
