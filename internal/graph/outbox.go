package graph

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/internal/wire"
)

// Outbox marks a sink node that writes delivery requests for an external
// sink (topology.ToSink). The node's Topic is the outbox topic,
// "sink-<name>" before WithPrefix adds the application id.
type Outbox struct {
	// Sink is the sink's name, chosen by the user.
	Sink string
	// Deliverer is the sinks.Sink the runner calls (kept untyped so the
	// graph does not depend on the sinks package).
	Deliverer any
	// Key returns the idempotency key of a record; nil: the default,
	// "<sink>:<origin>", with "#<n>" after it for the n-th (from 1)
	// further delivery one processing makes to the sink. The origin is
	// the consumed record's "topic/partition/offset" on the topic it was
	// read from (a repartition or through topic too), or, for a
	// punctuation, "punctuator/<stage>/<task>/<timer>@<firing time>"
	// (RFC 3339, UTC), followed for a stream-time one by
	// "/<topic>/<partition>/<offset>" of the consumed record after which
	// it fired.
	Key func(k, v any) (string, error)
}

// ResetMarkerTopic is the topic `onceflow reset` creates before its first
// change and deletes after its last: while it exists, a reset of the
// application is unfinished and no replica of it starts.
func ResetMarkerTopic(app string) string { return app + "-reset-in-progress" }

// DLQTopic is the dead-letter topic of an outbox topic.
func DLQTopic(outbox string) string { return outbox + "-dlq" }

// LedgerTopic is the changelog topic of an outbox topic's delivery ledger.
func LedgerTopic(outbox string) string { return outbox + "-ledger-changelog" }

// Outboxes lists the sink nodes that write outbox topics, by topic.
func (g *Graph) Outboxes() []*Node {
	var ns []*Node
	for _, n := range g.Nodes {
		if n.Kind == KindSink && n.Outbox != nil {
			ns = append(ns, n)
		}
	}
	slices.SortFunc(ns, func(a, b *Node) int { return strings.Compare(a.Topic, b.Topic) })
	return ns
}

// OutboxTopics lists the outbox topics, sorted.
func (g *Graph) OutboxTopics() []string {
	var ts []string
	for _, n := range g.Outboxes() {
		ts = append(ts, n.Topic)
	}
	return ts
}

// Lineager is implemented by an Emitter that knows the lineage of the
// record being processed ("topic/partition/offset" of the input record it
// descends from, carried through repartition topics; for a punctuation,
// "punctuator/<stage>/<task>").
type Lineager interface {
	Lineage() string
}

// lineage is the lineage of the record being processed.
func (c *Context) lineage() string {
	if l, ok := c.out.(Lineager); ok {
		return l.Lineage()
	}
	return c.coordinates()
}

// coordinates names the consumed record being processed by its own
// place: "topic/partition/offset" on the topic it was read from, a
// source, repartition or through topic alike.
func (c *Context) coordinates() string {
	in := c.input
	return wire.Source(in.Topic, in.Partition, in.Offset)
}

// origin is what the default idempotency keys of the current processing
// start from, unique to it and the same when it runs again: the consumed
// record's coordinates (not its lineage, which every record read back
// from a fan-out shares), or, for a punctuation, the punctuator's
// lineage and timer with the time of the firing and, for a stream-time
// one, the record after which it fired.
func (c *Context) origin() string {
	if c.originKey != "" {
		return c.originKey
	}
	if c.punct.on {
		c.originKey = c.lineage() + "/" + strconv.Itoa(c.punct.timer) + "@" + c.punct.at.UTC().Format(time.RFC3339Nano)
		if c.punct.after != "" {
			c.originKey += "/" + c.punct.after
		}
	} else {
		c.originKey = c.coordinates()
	}
	return c.originKey
}

// punctuation marks a Context running a timer: which one, when, and
// after which consumed record (stream time).
type punctuation struct {
	on    bool
	timer int
	at    time.Time
	after string
}

// outboxHeaders returns the headers of an outbox record for r: the
// idempotency key.
func (c *Context) outboxHeaders(n *Node, r Record) ([]Header, error) {
	var key string
	if n.Outbox.Key != nil {
		k, err := n.Outbox.Key(r.Key, r.Value)
		if err != nil {
			return nil, err
		}
		if k == "" {
			return nil, errors.New("idempotency key is empty")
		}
		key = k
	} else {
		key = n.Outbox.Sink + ":" + c.origin()
		if i := c.nextOutboxIndex(n); i > 0 {
			key += "#" + strconv.Itoa(i)
		}
	}
	return []Header{{Key: wire.HeaderIdempotencyKey, Value: []byte(key)}}, nil
}

// nextOutboxIndex counts the deliveries the current processing (one
// consumed record, or one firing of a punctuator) made to sink n: 0 for
// the first.
func (c *Context) nextOutboxIndex(n *Node) int {
	for i := range c.outboxSeq {
		if c.outboxSeq[i].node == n.ID {
			c.outboxSeq[i].count++
			return c.outboxSeq[i].count
		}
	}
	c.outboxSeq = append(c.outboxSeq, outboxCount{node: n.ID})
	return 0
}

// outboxCount is how many deliveries beyond the first one processing
// made to one outbox node.
type outboxCount struct{ node, count int }
