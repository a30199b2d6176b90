//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// A replica killed in the middle of restoring a task from nothing resumes
// that restore when it starts again soon (TestCrashMidRestoreResumesWithoutWipe),
// but not once the restore began longer ago than the changelog keeps
// tombstones: a key the part it restored holds may have been deleted since,
// and its tombstone compacted away. The restore's start is what dates the
// state then, and the replica wipes it.
func TestOldCutShortRestoreFromNothingIsWiped(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("compaction on demand needs the embedded broker")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	changelog := app + "-kv-changelog"
	env.CreateTopic(in, 1)
	g := compile(t, kvTopology(in, out))
	clock := &fakeClock{}
	config := func(instance, dir string) engine.Config {
		cfg := stateConfig(env, app, instance, dir)
		cfg.Now = clock.now
		cfg.CleanupDelay = 1000 * time.Hour // not under test here
		return cfg
	}
	produce := func(key, value string, outputs int) {
		env.ProduceRecords(&kgo.Record{Topic: in, Key: []byte(key), Value: []byte(value)})
		env.WaitCount(out, outputs, 60*time.Second)
	}

	// a, k and enough other keys for a restore of more than one batch.
	r1 := env.Start(config("r1", t.TempDir()), g)
	produce("a", "1", 1)
	produce("k", "v1", 2)
	const fill = 600
	big := strings.Repeat("f", 4000)
	var rs []*kgo.Record
	for i := range fill {
		rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "f-%03d", i), Value: []byte(big)})
	}
	env.ProduceRecords(rs...)
	env.WaitCount(out, 2+fill, 60*time.Second)
	r1.Stop()

	// r3 restores the first batch (a and k among it) and dies.
	dirC := t.TempDir()
	var calls atomic.Int64
	var first atomic.Int64 // the offset after r3's first batch
	cut := make(chan struct{})
	cfg := config("r3", dirC)
	cfg.Hooks.BeforeRestoreBatch = func(topic string, _ int32, _ int, next int64) error {
		if topic != changelog {
			return nil
		}
		switch calls.Add(1) {
		case 1:
			first.Store(next)
			return nil
		case 2:
			close(cut)
		}
		return errors.New("injected crash in the middle of a restore")
	}
	r3 := env.Start(cfg, g)
	recv(t, "r3's restore to reach its second batch", cut, 60*time.Second)
	r3.Crash()
	if s := r3.E.Stats(); s.Restored == 0 || s.Restored >= 2+fill || first.Load() < 4 {
		t.Fatalf("r3 restored %d records (up to offset %d) before it died; the test needs a and k in and the rest not", s.Restored, first.Load())
	}

	// Another owner deletes k; two hours later its tombstone is gone.
	r2 := env.Start(config("r2", t.TempDir()), g)
	produce("k", "del", 3+fill)
	produce("x", "1", 4+fill)
	produce("y", "1", 5+fill)
	r2.Stop()
	clock.advance(2 * time.Hour)
	compactAway(t, env, changelog, "k")

	r3 = env.Start(config("r3", dirC), g)
	produce("k", "v2", 6+fill)
	r3.Stop()
	outs := env.Read(out)
	if got := string(outs[len(outs)-1].Value); got != "had=none" {
		t.Errorf("k after it was deleted: %s, want had=none (a deleted key came back)", got)
	}
	if s := r3.E.Stats(); s.Wipes != 1 || s.Restored != 3+fill {
		t.Errorf("r3 wiped %d task stores and restored %d records, want 1 wipe and a full restore of %d", s.Wipes, s.Restored, 3+fill)
	}
}
