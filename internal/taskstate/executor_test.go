package taskstate_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/statestore"
)

// refusal is an output or state change the emitter refuses, as the
// engine's size and timestamp checks do.
type refusal struct{ reason, what string }

func (r *refusal) Error() string        { return r.reason + ": " + r.what }
func (r *refusal) RejectReason() string { return r.reason }

// outage is a codec's schema registry out of reach.
type outage struct{}

func (outage) Error() string     { return "registry unreachable" }
func (outage) Unavailable() bool { return true }

// emitter buffers outputs ("topic:value") and rejections
// ("reason@node"), and refuses the outputs refuse names.
type emitter struct {
	state   *taskstate.State
	out     []string
	rejects []string
	refuse  map[string]error // by value
}

func (e *emitter) Emit(topic string, _, value []byte, _ []graph.Header, _ time.Time) error {
	if err := e.refuse[string(value)]; err != nil {
		return err
	}
	e.out = append(e.out, topic+":"+string(value))
	return nil
}

func (e *emitter) Reject(rej *graph.Rejection) error {
	e.rejects = append(e.rejects, rej.Reason+"@"+rej.Node)
	return nil
}

func (e *emitter) Mark() graph.Mark {
	return graph.Mark{Outputs: len(e.out), Rejections: len(e.rejects), State: e.state.Mark()}
}

func (e *emitter) Rollback(m graph.Mark) {
	e.out, e.rejects = e.out[:m.Outputs], e.rejects[:m.Rejections]
	e.state.Rollback(m.State)
}

func (e *emitter) Lineage() string { return "in/0/0" }

// rig is a graph on a State with a transaction: a source of "in" whose
// values are comma-separated words, each forwarded on its own (the source
// splits, unless unsplit), to a stage that does what the word says, then a
// sink of "out". Words: "bad" fails the stage, "dup" is rejected by the
// gate "gate", "put" writes the key-value store "kv", "drop" emits with
// the error dropped, "drop+put" both, "alone" forwards alone; any other
// word goes out.
type rig struct {
	src   *graph.Node
	state *taskstate.State
	txn   *statestore.Txn
	em    *emitter
	x     *taskstate.Executor
	timer graph.TimerRef
}

func newRig(t *testing.T, unsplit bool, checkChange func(store string, key, value []byte) error, fire func(c *graph.Context, at time.Time) error) *rig {
	t.Helper()
	src := &graph.Node{ID: 0, Name: "source-in", Kind: graph.KindSource, Topic: "in", Splits: !unsplit,
		Decode: func(k, v []byte) (any, any, error) {
			switch string(v) {
			case "garbage":
				return nil, nil, errors.New("not a word list")
			case "outage":
				return nil, nil, outage{}
			}
			return string(k), string(v), nil
		}}
	sink := &graph.Node{ID: 2, Name: "to-out", Kind: graph.KindSink, Topic: "out",
		Encode: func(k, v any) ([]byte, []byte, error) { return []byte(k.(string)), []byte(v.(string)), nil }}
	gate := &graph.Node{ID: 1, Name: "gate", Kind: graph.KindProcessor, Children: []*graph.Node{sink},
		Stores: []graph.Store{{Name: "kv"}}, Timers: []graph.Timer{{Kind: graph.WallClock, Every: time.Second, Fire: fire}},
		Process: func(c *graph.Context, r graph.Record) error {
			word := r.Value.(string)
			switch word {
			case "bad":
				return errors.New("stage failed")
			case "dup":
				return &graph.Rejection{Reason: wire.ReasonDuplicate}
			case "put":
				if err := c.State().Put("kv", []byte(r.Key.(string)), []byte(word)); err != nil {
					_ = err // dropped: the executor rejects the record all the same
				}
				return c.Forward(r)
			case "drop":
				_ = c.Forward(r) // a refusal dropped
				return nil
			case "drop+put":
				_ = c.Forward(r)
				_ = c.State().Put("kv", []byte(r.Key.(string)), []byte(word))
				return nil
			case "alone":
				return c.ForwardAlone(r, "an output of its own")
			case "outage":
				return outage{}
			}
			return c.Forward(r)
		}}
	words := &graph.Node{ID: 3, Name: "words", Kind: graph.KindProcessor, Splits: true, Children: []*graph.Node{gate},
		Process: func(c *graph.Context, r graph.Record) error {
			for w := range strings.SplitSeq(r.Value.(string), ",") {
				if err := c.Forward(graph.Record{Key: r.Key, Value: w, Headers: r.Headers, Timestamp: r.Timestamp}); err != nil {
					return err
				}
			}
			return nil
		}}
	if unsplit {
		words.Splits = false
	}
	src.Children = []*graph.Node{words}
	graph.New("rig", []*graph.Node{src, gate, sink, words})

	db, err := statestore.Open("", statestore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	state := taskstate.New(taskstate.Config{
		Stores:       map[string]taskstate.Store{"kv": {Store: graph.Store{Name: "kv"}}},
		MaxClockSkew: time.Hour,
		Now:          time.Now,
		CheckChange:  checkChange,
	})
	txn := db.Begin()
	t.Cleanup(txn.Discard)
	state.Begin(txn)
	state.SetTask(statestore.Task{})
	em := &emitter{state: state, refuse: map[string]error{}}
	return &rig{src: src, state: state, txn: txn, em: em, x: taskstate.NewExecutor(state), timer: graph.TimerRef{Node: gate}}
}

func (r *rig) execute(value string) (taskstate.Outcome, error) {
	r.em.out, r.em.rejects = nil, nil
	return r.x.Execute(r.src, graph.Input{Topic: "in", Value: []byte(value), Timestamp: time.Now()}, []byte("k"), r.em)
}

// staged reads the kv store through the record scope.
func (r *rig) staged(t *testing.T) string {
	t.Helper()
	v, ok, err := r.state.Get("kv", []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "-"
	}
	return string(v)
}

func describe(o taskstate.Outcome) string {
	if o.Kind == taskstate.Rejected {
		return fmt.Sprintf("rejected %s@%s", o.Reason, o.Node)
	}
	return o.Kind.String()
}

// Each case runs one record and checks the outcome, what the emitter kept
// and what the record scope kept.
func TestExecute(t *testing.T) {
	tooLarge := &refusal{wire.ReasonTooLarge, "output too large"}
	badStamp := &refusal{wire.ReasonTimestampOutOfRange, "stamped beyond the topic's bound"}
	for _, c := range []struct {
		name    string
		value   string
		unsplit bool
		refuse  map[string]error
		change  error // CheckChange's answer
		want    string
		out     []string
		rejects []string
		staged  string
	}{
		{name: "every word out", value: "a,b", want: "ran", out: []string{"out:a", "out:b"}, staged: "-"},
		{name: "undecodable", value: "garbage", want: "rejected undecodable@", staged: "-"},
		{name: "a gate rejects one word, its siblings flow on", value: "a,dup,b", want: "ran",
			out: []string{"out:a", "out:b"}, rejects: []string{"duplicate@gate"}, staged: "-"},
		{name: "a failure rejects the whole record, its outputs and state rolled back", value: "put,a,bad", want: "rejected processing-error@", staged: "-"},
		{name: "a rejection that reaches the top keeps its node", value: "put,dup", unsplit: true, want: "rejected duplicate@gate", staged: "-"},
		{name: "a refusal the node dropped rejects the whole record", value: "put,drop", refuse: map[string]error{"drop": tooLarge},
			want: "rejected too-large@", staged: "-"},
		{name: "a refusal on a path forwarded alone is settled by its rejection", value: "put,alone", refuse: map[string]error{"alone": badStamp},
			want: "ran", out: []string{"out:put"}, rejects: []string{"timestamp-out-of-range@gate"}, staged: "put"},
		{name: "a size refusal before a timestamp refusal met first", value: "drop+put", refuse: map[string]error{"drop+put": badStamp}, change: tooLarge,
			want: "rejected too-large@", staged: "-"},
		{name: "a timestamp refusal alone", value: "put,drop+put", refuse: map[string]error{"drop+put": badStamp},
			want: "rejected timestamp-out-of-range@", staged: "-"},
		{name: "a state change refused, the error dropped", value: "put,a", change: tooLarge, want: "rejected too-large@", staged: "-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var check func(string, []byte, []byte) error
			if c.change != nil {
				check = func(string, []byte, []byte) error { return c.change }
			}
			r := newRig(t, c.unsplit, check, nil)
			if c.refuse != nil {
				r.em.refuse = c.refuse
			}
			o, err := r.execute(c.value)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(o); got != c.want {
				t.Errorf("outcome %s (%v), want %s", got, o.Err, c.want)
			}
			if o.Kind == taskstate.Rejected && o.Err == nil {
				t.Errorf("a rejection without its cause")
			}
			if !slices.Equal(r.em.out, c.out) || !slices.Equal(r.em.rejects, c.rejects) {
				t.Errorf("kept outputs %v and rejections %v, want %v and %v", r.em.out, r.em.rejects, c.out, c.rejects)
			}
			if got := r.staged(t); got != c.staged {
				t.Errorf("staged %q, want %q", got, c.staged)
			}
		})
	}
}

// An outage of something a codec depends on is never the record's fault:
// Execute returns it, with what the record buffered rolled back.
func TestExecuteOutage(t *testing.T) {
	for _, value := range []string{"outage", "put,a,outage"} {
		r := newRig(t, false, nil, nil)
		o, err := r.execute(value)
		if !graph.IsUnavailable(err) {
			t.Errorf("%s: outcome %s, error %v; want the outage", value, describe(o), err)
		}
		if len(r.em.out) > 0 || r.staged(t) != "-" {
			t.Errorf("%s: left outputs %v, staged %q", value, r.em.out, r.staged(t))
		}
	}
}

// A refusal is the record's own: the next record starts without it.
func TestExecuteForgetsRefusals(t *testing.T) {
	r := newRig(t, false, nil, nil)
	r.em.refuse["drop"] = &refusal{wire.ReasonTooLarge, "output too large"}
	if o, _ := r.execute("drop"); o.Kind != taskstate.Rejected {
		t.Fatalf("first record %s, want rejected", describe(o))
	}
	if o, _ := r.execute("a"); o.Kind != taskstate.Ran || !slices.Equal(r.em.out, []string{"out:a"}) {
		t.Errorf("next record %s with %v, want ran with out:a", describe(o), r.em.out)
	}
}

func TestPunctuate(t *testing.T) {
	tooLarge := &refusal{wire.ReasonTooLarge, "output too large"}
	for _, c := range []struct {
		name   string
		fire   func(c *graph.Context, at time.Time) error
		want   taskstate.Kind
		out    []string
		staged string
	}{
		{name: "writes and forwards", want: taskstate.Ran, out: []string{"out:tick"}, staged: "tick",
			fire: func(c *graph.Context, _ time.Time) error {
				if err := c.State().Put("kv", []byte("k"), []byte("tick")); err != nil {
					return err
				}
				return c.Forward(graph.Record{Key: "k", Value: "tick"})
			}},
		{name: "fails: rolled back", want: taskstate.Failed, staged: "-",
			fire: func(c *graph.Context, _ time.Time) error {
				_ = c.State().Put("kv", []byte("k"), []byte("tick"))
				_ = c.Forward(graph.Record{Key: "k", Value: "tick"})
				return errors.New("timer failed")
			}},
		{name: "meets a refusal it drops: rolled back", want: taskstate.Failed, staged: "-",
			fire: func(c *graph.Context, _ time.Time) error {
				_ = c.State().Put("kv", []byte("k"), []byte("tick"))
				_ = c.Forward(graph.Record{Key: "k", Value: "drop"})
				return nil
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, false, nil, c.fire)
			r.em.refuse["drop"] = tooLarge
			o := r.x.Punctuate(r.timer, statestore.Task{}, time.Now(), "", r.em)
			if o.Kind != c.want || (o.Kind == taskstate.Failed) != (o.Err != nil) {
				t.Errorf("outcome %s (%v), want %s", describe(o), o.Err, c.want)
			}
			if !slices.Equal(r.em.out, c.out) {
				t.Errorf("kept outputs %v, want %v", r.em.out, c.out)
			}
			if got := r.staged(t); got != c.staged {
				t.Errorf("staged %q, want %q", got, c.staged)
			}
		})
	}
}
