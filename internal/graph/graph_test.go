package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindSource: "source", KindProcessor: "processor", KindSink: "sink", Kind(7): "kind(7)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// builder builds a graph description: each node's ID is its index.
type builder struct{ nodes []*Node }

func (b *builder) add(kind Kind, name, topic string, parent *Node) *Node {
	n := &Node{ID: len(b.nodes), Name: name, Kind: kind, Topic: topic}
	b.nodes = append(b.nodes, n)
	if parent != nil {
		parent.Children = append(parent.Children, n)
	}
	return n
}

func TestNewSubTopologies(t *testing.T) {
	var b builder
	// Interleave the nodes of three parts, so that membership cannot come
	// from node order.
	a := b.add(KindSource, "src-a", "a", nil)
	c := b.add(KindSource, "src-c", "c", nil)
	am := b.add(KindProcessor, "a-map", "", a)
	bs := b.add(KindSource, "src-b", "b", nil)
	b.add(KindSink, "c-out", "out-c", c)
	b.add(KindSink, "a-out-1", "shared", am)
	b.add(KindSink, "b-out", "shared", bs)
	b.add(KindSink, "a-out-2", "shared", a)
	b.add(KindSink, "a-out-3", "a-side", am)

	g := New("g", b.nodes)
	want := []SubTopology{
		{ID: 0, SourceTopics: []string{"a"}, SinkTopics: []string{"shared", "a-side"}},
		{ID: 1, SourceTopics: []string{"c"}, SinkTopics: []string{"out-c"}},
		{ID: 2, SourceTopics: []string{"b"}, SinkTopics: []string{"shared"}},
	}
	if got, w := fmt.Sprintf("%+v", g.SubTopologies), fmt.Sprintf("%+v", want); got != w {
		t.Fatalf("SubTopologies =\n %s\nwant\n %s", got, w)
	}
	for topic, id := range map[string]int{"a": 0, "c": 1, "b": 2} {
		if got := g.SubTopologyOf(topic); got != id {
			t.Errorf("SubTopologyOf(%q) = %d, want %d", topic, got, id)
		}
	}
	wantNode := []int{0, 1, 0, 2, 1, 0, 2, 0, 0}
	for i, n := range b.nodes {
		if got := g.SubTopologyOfNode(n); got != wantNode[i] {
			t.Errorf("SubTopologyOfNode(%s) = %d, want %d", n.Name, got, wantNode[i])
		}
	}
	if got := g.SourceTopics(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("SourceTopics() = %v", got)
	}
	if got := g.SinkTopics(); !slices.Equal(got, []string{"a-side", "out-c", "shared"}) {
		t.Errorf("SinkTopics() = %v", got)
	}
	if g.Source("b") != bs || g.Source("zz") != nil {
		t.Errorf("Source lookup wrong")
	}
}

// A topic read twice (an invalid topology Describe still prints) keeps
// each source in its own sub-topology.
func TestSubTopologyOfNodeWithTopicReadTwice(t *testing.T) {
	var b builder
	x1 := b.add(KindSource, "x1", "x", nil)
	b.add(KindSink, "y", "y", x1)
	x2 := b.add(KindSource, "x2", "x", nil)
	b.add(KindSink, "z", "z", x2)
	g := New("g", b.nodes)
	if len(g.SubTopologies) != 2 {
		t.Fatalf("%d sub-topologies, want 2", len(g.SubTopologies))
	}
	if g.SubTopologyOfNode(x1) != 0 || g.SubTopologyOfNode(x2) != 1 {
		t.Fatalf("SubTopologyOfNode: x1 %d, x2 %d; want 0, 1", g.SubTopologyOfNode(x1), g.SubTopologyOfNode(x2))
	}
}

type sent struct {
	topic      string
	key, value string
	headers    []Header
	ts         time.Time
}

type collector struct {
	out      []sent
	rejected []*Rejection
}

func (c *collector) Reject(rej *Rejection) error {
	c.rejected = append(c.rejected, rej)
	return nil
}

func (c *collector) Mark() Mark { return Mark{Outputs: len(c.out), Rejections: len(c.rejected)} }

func (c *collector) Rollback(m Mark) {
	c.out = c.out[:m.Outputs]
	c.rejected = c.rejected[:m.Rejections]
}

func (c *collector) Emit(topic string, key, value []byte, headers []Header, ts time.Time) error {
	c.out = append(c.out, sent{topic, string(key), string(value), headers, ts})
	return nil
}

func stringSink(b *builder, name, topic string, parent *Node) *Node {
	n := b.add(KindSink, name, topic, parent)
	n.Encode = func(k, v any) ([]byte, []byte, error) {
		if s, ok := v.(string); ok && s == "bad" {
			return nil, nil, errors.New("cannot encode bad")
		}
		return []byte(fmt.Sprint(k)), []byte(fmt.Sprint(v)), nil
	}
	return n
}

func TestRunForwardsDepthFirst(t *testing.T) {
	var b builder
	src := b.add(KindSource, "src", "in", nil)
	var seen []string
	// twice forwards every record two times, with a suffix; it records the
	// node its context names before and after forwarding.
	twice := func(suffix string) func(*Context, Record) error {
		return func(c *Context, r Record) error {
			before := c.Node().Name
			for i := range 2 {
				out := r
				out.Value = fmt.Sprintf("%v%s%d", r.Value, suffix, i)
				if err := c.Forward(out); err != nil {
					return err
				}
			}
			if after := c.Node().Name; after != before {
				return fmt.Errorf("context node changed from %s to %s", before, after)
			}
			seen = append(seen, before)
			return nil
		}
	}
	p1 := b.add(KindProcessor, "p1", "", src)
	p1.Process = twice("a")
	stringSink(&b, "s1", "o1", p1)
	p2 := b.add(KindProcessor, "p2", "", p1)
	p2.Process = twice("b")
	stringSink(&b, "s2", "o2", p2)
	stringSink(&b, "s0", "o0", src)

	in := &Input{Topic: "in", Partition: 1, Offset: 9, Headers: []Header{{Key: "h", Value: []byte("1")}}}
	var inputs []*Input
	p3 := b.add(KindProcessor, "p3", "", src)
	p3.Process = func(c *Context, r Record) error { inputs = append(inputs, c.Input()); return nil }

	g := New("g", b.nodes)
	out := &collector{}
	ts := time.Unix(100, 0)
	if err := Run(g.Source("in"), in, Record{Key: "k", Value: "v", Headers: in.Headers, Timestamp: ts}, out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got []string
	for _, s := range out.out {
		got = append(got, s.topic+":"+s.value)
		if s.key != "k" || !s.ts.Equal(ts) || len(s.headers) != 1 || s.headers[0].Key != "h" {
			t.Errorf("record %+v lost its key, timestamp or headers", s)
		}
	}
	want := []string{
		"o1:va0", "o2:va0b0", "o2:va0b1",
		"o1:va1", "o2:va1b0", "o2:va1b1",
		"o0:v",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("emitted\n %v\nwant\n %v", got, want)
	}
	if !slices.Equal(seen, []string{"p2", "p2", "p1"}) {
		t.Errorf("processors finished in order %v", seen)
	}
	if len(inputs) != 1 || inputs[0] != in {
		t.Errorf("Input() = %v, want the input given to Run", inputs)
	}
}

func TestRunNodeErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		wire    func(b *builder, src *Node)
		node    string
		message string
	}{
		{"processor", func(b *builder, src *Node) {
			p := b.add(KindProcessor, "p", "", src)
			p.Process = func(*Context, Record) error { return boom }
		}, "p", `node "p": boom`},
		{"inner node keeps its name through a wrapping parent", func(b *builder, src *Node) {
			outer := b.add(KindProcessor, "outer", "", src)
			outer.Process = func(c *Context, r Record) error {
				if err := c.Forward(r); err != nil {
					return fmt.Errorf("outer: %w", err)
				}
				return nil
			}
			inner := b.add(KindProcessor, "inner", "", outer)
			inner.Process = func(*Context, Record) error { return boom }
		}, "inner", `outer: node "inner": boom`},
		{"sink encode", func(b *builder, src *Node) {
			p := b.add(KindProcessor, "bad", "", src)
			p.Process = func(c *Context, r Record) error { r.Value = "bad"; return c.Forward(r) }
			stringSink(b, "sink", "out", p)
		}, "sink", `node "sink": cannot encode bad`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			src := b.add(KindSource, "src", "in", nil)
			tc.wire(&b, src)
			g := New("g", b.nodes)
			err := Run(g.Source("in"), &Input{Topic: "in"}, Record{Key: "k", Value: "v"}, &collector{})
			ne, ok := errors.AsType[*NodeError](err)
			if !ok {
				t.Fatalf("Run = %v (%T), want a *NodeError", err, err)
			}
			if ne.Node != tc.node {
				t.Errorf("Node = %q, want %q", ne.Node, tc.node)
			}
			if err.Error() != tc.message {
				t.Errorf("Error() = %q, want %q", err, tc.message)
			}
			if tc.node != "sink" && !errors.Is(err, boom) {
				t.Errorf("%v does not unwrap to the cause", err)
			}
			if strings.Count(err.Error(), "node ") != 1 {
				t.Errorf("%q: wrapped in more than one NodeError", err)
			}
		})
	}
}

// reasonedErr is a failure that names its rejection reason.
type reasonedErr struct{}

func (reasonedErr) Error() string        { return "refused" }
func (reasonedErr) RejectReason() string { return "too-big" }

// ForwardAlone turns a failure on one forwarded record's path into a
// rejection of that record alone (its outputs rolled back, the reason a
// Reasoned error names or processing-error), and the record being handled
// goes on with its other outputs.
func TestForwardAloneContainsFailures(t *testing.T) {
	var b builder
	src := b.add(KindSource, "src", "in", nil)
	closer := b.add(KindProcessor, "closer", "", src)
	closer.Splits = true
	closer.Process = func(c *Context, r Record) error {
		for _, v := range []string{"ok-1", "bad", "refuse", "ok-2"} {
			if err := c.ForwardAlone(Record{Key: r.Key, Value: v}, "result "+v); err != nil {
				return err
			}
		}
		return nil
	}
	check := b.add(KindProcessor, "check", "", closer)
	check.Process = func(c *Context, r Record) error {
		if err := c.Forward(r); err != nil { // o1 first: rolled back with the path
			return err
		}
		if r.Value == "refuse" {
			return reasonedErr{}
		}
		return nil
	}
	stringSink(&b, "s1", "o1", check)
	g := New("g", b.nodes)
	out := &collector{}
	if err := Run(g.Source("in"), &Input{Topic: "in"}, Record{Key: "k", Value: "v"}, out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got []string
	for _, s := range out.out {
		got = append(got, s.value)
	}
	if !slices.Equal(got, []string{"ok-1", "ok-2"}) {
		t.Errorf("emitted %v, want ok-1 and ok-2", got)
	}
	var rej []string
	for _, r := range out.rejected {
		rej = append(rej, r.Reason+"@"+r.Node+": "+r.Detail)
		if r.Err == nil {
			t.Errorf("rejection %v carries no error", r)
		}
	}
	want := []string{
		`processing-error@s1: result bad: node "s1": cannot encode bad`,
		`too-big@check: result refuse: node "check": refused`,
	}
	if !slices.Equal(rej, want) {
		t.Errorf("rejections\n %q\nwant\n %q", rej, want)
	}
}

type outageErr struct{}

func (outageErr) Error() string     { return "registry down" }
func (outageErr) Unavailable() bool { return true }

// An outage on a forwarded record's path (a codec whose registry is out of
// reach) is not contained as a rejection: it fails the record being
// handled, so the runtime aborts and retries instead of rejecting.
func TestForwardAloneLetsOutagesThrough(t *testing.T) {
	var b builder
	src := b.add(KindSource, "src", "in", nil)
	closer := b.add(KindProcessor, "closer", "", src)
	closer.Splits = true
	closer.Process = func(c *Context, r Record) error {
		return c.ForwardAlone(Record{Key: r.Key, Value: "result"}, "result")
	}
	down := b.add(KindProcessor, "down", "", closer)
	down.Process = func(c *Context, r Record) error { return fmt.Errorf("encode: %w", outageErr{}) }
	g := New("g", b.nodes)
	out := &collector{}
	err := Run(g.Source("in"), &Input{Topic: "in"}, Record{Key: "k", Value: "v"}, out)
	if !IsUnavailable(err) {
		t.Fatalf("Run: %v, want the outage", err)
	}
	if len(out.rejected) != 0 {
		t.Errorf("rejections %v, want none", out.rejected)
	}
}
