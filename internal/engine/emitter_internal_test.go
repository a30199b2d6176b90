package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/statestore"
)

// testEmitter is an emitter on a policy that accepts records up to 2000
// bytes, writes "out" (4 partitions) and rejects to "app-rejected" (2
// partitions), with "app-x-repartition" as a link topic.
func testEmitter() *emitter {
	policy := &outputPolicy{
		now:           time.Now,
		rejected:      "app-rejected",
		rejectedParts: 2,
		sinkParts:     map[string]int32{"out": 4},
		limit:         sizeLimit{batch: 2000, topic: "out", of: map[string]int{"out": 2000, "app-rejected": 2000}},
	}
	em := &emitter{policy: policy, internal: map[string]bool{"app-x-repartition": true}, log: hclog.NewNullLogger()}
	em.state = taskstate.New(taskstate.Config{Source: em.source})
	return em
}

func header(hs []graph.Header, key string) string {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// The emitter buffers a record's outputs with its lineage, refuses an
// output no topic accepts with a typed refusal, rolls back to a mark, and
// rejects the input with its reason, lineage, cause and node; no broker.
func TestEmitterBuffersOutputsAndRejections(t *testing.T) {
	em := testEmitter()
	in := kafka.Record{Topic: "in", Partition: 3, Offset: 7, Key: []byte("k"), Value: []byte("v"), Timestamp: time.Now()}
	em.record(&in)
	if err := em.Emit("out", []byte("k"), []byte("v1"), nil, in.Timestamp); err != nil {
		t.Fatal(err)
	}
	m := em.Mark()
	if err := em.Emit("out", []byte("k"), []byte("v2"), nil, in.Timestamp); err != nil {
		t.Fatal(err)
	}
	err := em.Emit("out", []byte("k"), make([]byte, 3000), nil, in.Timestamp)
	if tl, ok := errors.AsType[*errTooLarge](err); !ok || tl.RejectReason() != wire.ReasonTooLarge {
		t.Fatalf("an output of 3000 bytes against a limit of 2000: %v, want errTooLarge", err)
	}
	if len(em.out) != 2 || string(em.out[0].Source) != "in/3/7" || em.out[0].Partition != wire.Partition([]byte("k"), 3, 4) {
		t.Fatalf("outputs %+v, want two with lineage in/3/7", em.out)
	}
	em.Rollback(m)
	if len(em.out) != 1 || string(em.out[0].Value) != "v1" {
		t.Fatalf("after the rollback: %d outputs, want v1 alone", len(em.out))
	}
	rej := &graph.Rejection{Reason: "invalid", Node: "gate", Err: errors.New("no")}
	if err := em.Reject(rej); err != nil {
		t.Fatal(err)
	}
	r := em.out[1]
	if r.Topic != "app-rejected" || r.Partition != 1 || string(r.Value) != "v" || len(em.rejects) != 1 || em.rejects[0] != "invalid" {
		t.Fatalf("rejection %+v (reasons %v), want the input on app-rejected/1 for invalid", r, em.rejects)
	}
	if got := header(r.Headers, wire.HeaderRejectReason) + " " + header(r.Headers, wire.HeaderSource) + " " + header(r.Headers, wire.HeaderRejectNode); got != "invalid in/3/7 gate" {
		t.Errorf("rejection headers %q, want reason, lineage and node", got)
	}
	if got := header(r.Headers, wire.HeaderRejectError); got != rej.Error() {
		t.Errorf("rejection error header %q, want %q", got, rej.Error())
	}

	em.record(&kafka.Record{Topic: "in", Partition: 0, Offset: 8})
	if len(em.out) != 0 || len(em.rejects) != 0 || em.source() != "in/0/8" {
		t.Errorf("the next record starts with %d outputs, %d rejections, lineage %q", len(em.out), len(em.rejects), em.source())
	}
}

// A record of a link topic takes the lineage it carries, unless that is
// longer than any lineage a replica writes; a punctuation's lineage names
// its stage and task.
func TestEmitterLineage(t *testing.T) {
	em := testEmitter()
	carried := kafka.Record{Topic: "app-x-repartition", Offset: 1, Headers: []graph.Header{{Key: wire.HeaderSource, Value: []byte("in/2/40")}}}
	em.record(&carried)
	if got := em.Lineage(); got != "in/2/40" {
		t.Errorf("lineage of a repartitioned record: %q, want in/2/40", got)
	}
	foreign := kafka.Record{Topic: "app-x-repartition", Offset: 1, Headers: []graph.Header{{Key: wire.HeaderSource, Value: make([]byte, maxLineage+1)}}}
	em.record(&foreign)
	if got := em.Lineage(); got != "app-x-repartition/0/1" {
		t.Errorf("lineage of a record with an over-long header: %q, want its own coordinates", got)
	}
	notLink := kafka.Record{Topic: "in", Offset: 5, Headers: carried.Headers}
	em.record(&notLink)
	if got := em.Lineage(); got != "in/0/5" {
		t.Errorf("lineage of a source record with a lineage header: %q, want its own coordinates", got)
	}
	em.punctuation("totals", statestore.Task{SubTopology: 1, Partition: 2}, time.Now())
	if got, want := em.Lineage(), wire.PunctuatorSource("totals", 1, 2); got != want {
		t.Errorf("lineage of a punctuation: %q, want %q", got, want)
	}
}
