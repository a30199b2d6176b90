package engine

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/kafka"
)

// fakeTxnProducer records the calls of a commit and fails the ones told to.
type fakeTxnProducer struct {
	calls   []string
	err     error            // Err
	fail    map[string]error // by call
	commits []error          // Commit's answers in turn (then nil)
	state   kafka.TxnState   // State
	added   map[string]map[int32]int64
}

func (f *fakeTxnProducer) call(name string) error {
	f.calls = append(f.calls, name)
	return f.fail[name]
}
func (f *fakeTxnProducer) Err() error { return f.err }
func (f *fakeTxnProducer) AddOffsets(_ context.Context, o map[string]map[int32]int64, _ kafka.GroupMetadata) error {
	f.added = o
	return f.call("add")
}
func (f *fakeTxnProducer) Commit(context.Context) error {
	f.calls = append(f.calls, "commit")
	if len(f.commits) == 0 {
		return nil
	}
	err := f.commits[0]
	f.commits = f.commits[1:]
	return err
}
func (f *fakeTxnProducer) State() kafka.TxnState       { return f.state }
func (f *fakeTxnProducer) Flush(context.Context) error { return f.call("flush") }
func (f *fakeTxnProducer) CommitOffsets(_ context.Context, o map[string]map[int32]int64, _ kafka.GroupMetadata) error {
	f.added = o
	return f.call("commit offsets")
}

// fakeMember holds its next join off between Hold and release.
type fakeMember struct{ held, released int }

func (m *fakeMember) Metadata() kafka.GroupMetadata { return kafka.GroupMetadata{} }
func (m *fakeMember) Hold(context.Context) func() {
	m.held++
	return func() { m.released++ }
}

func testCommitter(t *testing.T) committer {
	m, err := newMetrics(prometheus.NewRegistry(), "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	return committer{timeouts: kafka.Timeouts{Commit: 5 * time.Second}, log: hclog.NewNullLogger(), m: m}
}

// A transactional commit adds the offsets (or, with none, the proof's) and
// commits, holding the member's join off until released; a failed produce
// or call names its step; an at-least-once commit flushes first; no broker.
func TestCommitterCommitsAndNamesTheFailedStep(t *testing.T) {
	c := testCommitter(t)
	offsets := map[string]map[int32]int64{"in": {0: 5}}
	noProof := func(context.Context) (map[string]map[int32]int64, error) {
		t.Error("a transaction with input asked for a proof")
		return nil, nil
	}
	p, s := &fakeTxnProducer{}, &fakeMember{}
	release, step, err := c.transaction(p, s, offsets, noProof)
	if err != nil || step != "" || strings.Join(p.calls, ",") != "add,commit" || !maps.Equal(p.added["in"], offsets["in"]) {
		t.Fatalf("commit: step %q, %v, calls %v, offsets %v", step, err, p.calls, p.added)
	}
	if s.held != 1 || s.released != 0 {
		t.Errorf("held %d, released %d before release; want 1, 0", s.held, s.released)
	}
	release()
	if s.released != 1 {
		t.Errorf("released %d after release, want 1", s.released)
	}

	proof := map[string]map[int32]int64{"in": {1: 9}}
	p = &fakeTxnProducer{}
	if _, _, err := c.transaction(p, &fakeMember{}, nil, func(context.Context) (map[string]map[int32]int64, error) { return proof, nil }); err != nil || !maps.Equal(p.added["in"], proof["in"]) {
		t.Errorf("a transaction without input added %v (%v), want the proof's %v", p.added, err, proof)
	}
	if _, step, _ := c.transaction(&fakeTxnProducer{}, &fakeMember{}, nil, func(context.Context) (map[string]map[int32]int64, error) { return nil, errNothingToFence }); step != "positions" {
		t.Errorf("a proof that failed: step %q, want positions", step)
	}

	failed := errors.New("failed")
	p = &fakeTxnProducer{err: failed}
	if _, step, err := c.transaction(p, &fakeMember{}, offsets, noProof); step != "produce" || err != failed || len(p.calls) != 0 || c.m.commitFailures.values()["produce"] != 1 {
		t.Errorf("failed sends: step %q, %v, calls %v; want produce, counted, nothing called", step, err, p.calls)
	}
	if _, step, _ := c.transaction(&fakeTxnProducer{fail: map[string]error{"add": failed}}, &fakeMember{}, offsets, noProof); step != "add offsets" {
		t.Errorf("AddOffsets failed: step %q, want add offsets", step)
	}
	if _, step, _ := c.transaction(&fakeTxnProducer{commits: []error{failed}, state: kafka.TxnAbortable}, &fakeMember{}, offsets, noProof); step != "commit" {
		t.Errorf("Commit failed: step %q, want commit", step)
	}

	p, s = &fakeTxnProducer{}, &fakeMember{}
	if _, step, err := c.offsets(p, s, offsets); err != nil || step != "" || strings.Join(p.calls, ",") != "flush,commit offsets" || s.held != 1 || s.released != 1 {
		t.Errorf("at least once: step %q, %v, calls %v, held %d, released %d", step, err, p.calls, s.held, s.released)
	}
	if _, step, _ := c.offsets(&fakeTxnProducer{fail: map[string]error{"flush": failed}}, &fakeMember{}, offsets); step != "flush" {
		t.Errorf("Flush failed: step %q, want flush", step)
	}
	if _, step, _ := c.offsets(&fakeTxnProducer{fail: map[string]error{"commit offsets": failed}}, &fakeMember{}, offsets); step != "commit offsets" {
		t.Errorf("CommitOffsets failed: step %q, want commit offsets", step)
	}
}

// EndTxn is retried while its outcome is unknown (the transaction still
// open), at most three times; a timed-out call or a transaction that
// became abortable, fatal or ready is not retried.
func TestCommitTxnRetriesAnUnknownOutcome(t *testing.T) {
	c := testCommitter(t)
	unknown := errors.New("coordinator went away")
	for _, tc := range []struct {
		name    string
		commits []error
		state   kafka.TxnState
		calls   int
		want    error
	}{
		{"second attempt commits", []error{unknown}, kafka.TxnOpen, 2, nil},
		{"three unknown outcomes", []error{unknown, unknown, unknown}, kafka.TxnOpen, 3, errUnknownOutcome},
		{"abortable", []error{unknown}, kafka.TxnAbortable, 1, unknown},
		{"fatal", []error{unknown}, kafka.TxnFatal, 1, unknown},
		{"ready", []error{unknown}, kafka.TxnReady, 1, unknown},
		{"timed out", []error{kafka.ErrCallTimeout}, kafka.TxnOpen, 1, kafka.ErrCallTimeout},
	} {
		p := &fakeTxnProducer{commits: tc.commits, state: tc.state}
		err := c.commitTxn(context.Background(), p)
		if len(p.calls) != tc.calls || (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %d calls, %v; want %d, %v", tc.name, len(p.calls), err, tc.calls, tc.want)
		}
	}
}
