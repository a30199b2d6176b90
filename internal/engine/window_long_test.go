//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package engine_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Final window results are written exactly once across a crash between a
// commit and its local apply (the restore replays the tail, emitted facts
// included) and a move of tasks to a replica with no state (a full
// restore): every window's count equals the truth, no window is written
// twice, and every late record is in the rejected topic with reason late.
func TestWindowFinalResultsOnceAcrossCrashAndRestore(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 3)
	g := compile(t, windowTopology(in, out))
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	v := makeViews(in, base, 6000)
	// One record per key far ahead closes every window of the views.
	var flush []*kgo.Record
	for i := range 30 {
		flush = append(flush, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "flush-%d", i), Value: []byte("page"), Timestamp: base.Add(2 * time.Hour)})
	}
	dirA := t.TempDir()

	env.ProduceRecords(v.records[:3000]...)
	crashed := make(chan struct{})
	cfg := stateConfig(env, app, "r1", dirA)
	applies := 0
	cfg.Hooks.BeforeApply = func() bool {
		applies++
		if applies == 4 {
			close(crashed)
			return false
		}
		return true
	}
	r1 := env.Start(cfg, g)
	recv(t, "a commit whose apply is skipped", crashed, 60*time.Second)
	r1.Crash()
	before := len(env.Read(out))
	if before == 0 {
		t.Fatal("no final result committed before the crash: the crash tests nothing")
	}

	r1 = env.Start(stateConfig(env, app, "r1", dirA), g)
	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	env.ProduceRecords(v.records[3000:]...)
	env.ProduceRecords(flush...)
	env.WaitCount(out, len(v.truth), 120*time.Second)
	time.Sleep(time.Second) // anything written twice would show by now
	r1.Stop()
	r2.Stop()

	got := map[string]int64{}
	dup := 0
	kc := topology.WindowedCodec(serde.String())
	for _, r := range env.Read(out) {
		w, err := kc.Decode(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("%s@%d", w.Key, w.Start.UnixMilli())
		if _, ok := got[k]; ok {
			dup++
		}
		got[k] = int64(binary.BigEndian.Uint64(r.Value))
	}
	if dup > 0 {
		t.Errorf("%d windows written more than once", dup)
	}
	wrong := 0
	for k, n := range v.truth {
		if got[k] != n {
			wrong++
			if wrong <= 5 {
				t.Errorf("window %s: count %d, want %d", k, got[k], n)
			}
		}
	}
	if len(got) != len(v.truth) || wrong > 0 {
		t.Errorf("%d windows written, want %d; %d wrong", len(got), len(v.truth), wrong)
	}
	late := 0
	for _, r := range env.Read(app + "-rejected") {
		if r.Headers["onceflow-reject-reason"] == topology.ReasonLate {
			late++
		}
	}
	if late != v.late {
		t.Errorf("%d records rejected as late, want %d", late, v.late)
	}
	t.Logf("%d windows (%d before the crash), %d late; r1 %+v; r2 %+v", len(got), before, late, r1.E.Stats(), r2.E.Stats())
}
