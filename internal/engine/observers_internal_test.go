package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/kafka"
)

// The observers registered for a session learn of a commit and an abort
// without a broker: the stall watch's pending input, repeat detection,
// Status's last commit, the metrics (rejected records not counted as an
// output), the slow commit warning and the transaction size.
func TestCommitObservers(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: Config{ExactlyOnce: true, Timeouts: kafka.Timeouts{Transaction: 8 * time.Second, Commit: 4 * time.Second}},
		m: m, log: hclog.NewNullLogger(), output: outputPolicy{rejected: "app-rejected"}, commits: commitWatch{progress: newProgress(nil), size: newTxnSize(1000, time.Second)}}
	d := &driver{e: e, observers: e.commitObservers()}

	e.commits.progress.received("in", 0)
	e.commits.progress.received("in", 1)
	offsets := map[string]map[int32]int64{"in": {0: 5}}
	e.commits.repeats.failed(map[string]map[int32]int64{"in": {0: 3, 1: 7}}, "commit", errors.New("bad input"))
	tl := newTally()
	tl.in["0_0"] = 3
	tl.out["out"] = 2
	tl.out["app-rejected"] = 1
	tl.rejected["too-large"] = 1
	d.notifyCommitted(commitInfo{offsets: offsets, tally: tl, records: 3, took: 5 * time.Second, age: 6 * time.Second})

	if pending, aborts := e.commits.progress.pendingSince(); len(pending) != 1 || aborts != 0 {
		t.Errorf("after the commit of in/0: pending %v, aborts %d; want only in/1, 0 aborts", pending, aborts)
	}
	if _, ok := e.commits.repeats.at[topicPartition{"in", 0}]; ok || len(e.commits.repeats.at) != 1 {
		t.Errorf("repeat detection after the commit of in/0: %v, want only in/1", e.commits.repeats.at)
	}
	if e.commits.live.mu.lastCommit != 5*time.Second {
		t.Errorf("last commit: %v, want 5s", e.commits.live.mu.lastCommit)
	}
	for what, c := range map[string]struct {
		got  int64
		want int64
	}{
		"committed":   {m.committed.value(), 1},
		"records in":  {sum(m.recordsIn.values()), 3},
		"records out": {sum(m.recordsOut.values()), 2},
		"rejected":    {sum(m.rejected.values()), 1},
		"slow":        {m.slowCommits.value(), 1},
		"shrinks":     {m.txnShrinks.value(), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s after a commit: %d, want %d", what, c.got, c.want)
		}
	}
	if len(tl.in)+len(tl.out)+len(tl.rejected) != 0 {
		t.Errorf("the tally was not cleared once counted: %+v", tl)
	}

	d.notifyAborted(abortInfo{step: "commit", err: kafka.ErrCallTimeout, state: kafka.TxnReady, timedOut: true, age: time.Second})
	if _, aborts := e.commits.progress.pendingSince(); aborts != 1 {
		t.Errorf("aborts seen by the stall watch: %d, want 1", aborts)
	}
	for what, c := range map[string]struct {
		got  int64
		want int64
	}{
		"aborted":  {m.aborted.value(), 1},
		"timeouts": {m.commitTimeouts.value(), 1},
		"failures": {sum(m.commitFailures.values()), 1},
		"shrinks":  {m.txnShrinks.value(), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s after a timed-out step: %d, want %d", what, c.got, c.want)
		}
	}
	if e.commits.size.records != 250 {
		t.Errorf("transaction size after two shrinks: %d records, want 250", e.commits.size.records)
	}
}
