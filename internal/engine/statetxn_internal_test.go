package engine

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// fakeChangelogProducer keeps what the state transaction sends and answers
// its changelog offsets.
type fakeChangelogProducer struct {
	sent    []kafka.Message
	resets  int
	tracked map[string]map[int32]int64
	err     error
}

func (f *fakeChangelogProducer) Send(m *kafka.Message) { f.sent = append(f.sent, *m) }
func (f *fakeChangelogProducer) ResetTracked()         { f.resets++ }
func (f *fakeChangelogProducer) TrackedOffsets(context.Context) (map[string]map[int32]int64, error) {
	return f.tracked, f.err
}

// The state transaction opens a Pebble transaction per Kafka transaction,
// sends only the last write of each key among its unsent changes to the
// changelog (after a batch only once changelogChunk are unsent), applies a committed one with its changelog offsets and
// discards an aborted one; no broker.
func TestStateTxnSendsAppliesAndDiscards(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	db, err := statestore.Open("", statestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const changelog = "app-totals-changelog"
	r := &restorer{log: hclog.NewNullLogger(), m: m, g: &graph.Graph{},
		stores: map[string]storeInfo{"totals": {Store: graph.Store{Name: "totals"}, sub: 0, topic: changelog}}}
	r.db, r.byTopic = db, map[string]string{changelog: "totals"}
	e := &Engine{cfg: Config{Now: time.Now, MaxClockSkew: time.Hour, Timeouts: kafka.Timeouts{Transaction: 5 * time.Second}},
		m: m, log: hclog.NewNullLogger(), restorer: r}
	st := newStateTxn(e, testEmitter())
	p := &fakeChangelogProducer{tracked: map[string]map[int32]int64{changelog: {1: 42}}}
	task := statestore.Task{SubTopology: 0, Partition: 1}
	put := func(key, value string) {
		t.Helper()
		if err := st.txn.Put("totals", task, []byte(key), []byte(value)); err != nil {
			t.Fatal(err)
		}
	}

	if st.open() || !st.empty() {
		t.Fatalf("before begin: open %v, empty %v", st.open(), st.empty())
	}
	st.begin(p)
	if !st.open() || !st.empty() || p.resets != 1 {
		t.Fatalf("after begin: open %v, empty %v, tracked offsets reset %d times", st.open(), st.empty(), p.resets)
	}
	put("a", "1")
	put("b", "1")
	put("a", "2")
	put("a", "3")
	st.sendChunk(p)
	if len(p.sent) != 0 {
		t.Fatalf("after a batch of 4 changes: %d changelog records sent, want none before %d", len(p.sent), changelogChunk)
	}
	st.sendChanges(p)
	if len(p.sent) != 2 || string(p.sent[0].Key) != "b" || string(p.sent[1].Value) != "3" || p.sent[1].Topic != changelog || p.sent[1].Partition != 1 || !p.sent[1].Track {
		t.Fatalf("changelog records sent: %+v, want b=1 and a=3 on %s/1, tracked", p.sent, changelog)
	}
	if sent, collapsed := m.changesSent.value(), m.changesCollapsed.value(); sent != 2 || collapsed != 2 {
		t.Errorf("state changes sent %d, collapsed %d; want 2, 2", sent, collapsed)
	}
	put("b", "2")
	st.sendChanges(p)
	st.sendChanges(p)
	if len(p.sent) != 3 || string(p.sent[2].Value) != "2" {
		t.Fatalf("after one more write: %d records sent, want 3 (b=2 once)", len(p.sent))
	}
	if err := st.apply(p); err != nil {
		t.Fatal(err)
	}
	if st.open() {
		t.Errorf("the state transaction is still open after apply")
	}
	if v, _, _ := db.Get("totals", task, []byte("a")); string(v) != "3" {
		t.Errorf("a after apply: %q, want 3", v)
	}
	if off, ok, _ := db.Offset("totals", task); !ok || off != 42 {
		t.Errorf("changelog offset after apply: %d (%v), want 42", off, ok)
	}

	st.begin(p)
	put("a", "4")
	if st.empty() {
		t.Errorf("a transaction with a write counts as empty")
	}
	for i := range changelogChunk {
		put(strconv.Itoa(i), "x")
	}
	before := len(p.sent)
	st.sendChunk(p)
	if got := len(p.sent) - before; got != changelogChunk+1 {
		t.Errorf("after %d more changes: %d changelog records sent, want %d (with a=4)", changelogChunk, got, changelogChunk+1)
	}
	st.discard()
	if v, _, _ := db.Get("totals", task, []byte("a")); st.open() || string(v) != "3" {
		t.Errorf("after discard: open %v, a %q; want closed, 3", st.open(), v)
	}

	st.begin(p)
	put("a", "5")
	p.err = errors.New("no offsets")
	if err := st.apply(p); err == nil || !st.open() {
		t.Errorf("apply without changelog offsets: %v, open %v; want an error and the transaction left to discard", err, st.open())
	}
	st.discard()
}
