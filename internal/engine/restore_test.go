//go:build cluster || !cluster

// `make test-cluster` runs this file's tests on three brokers too: the tag
// marks the file for scripts/test-tagged.sh, the constraint always holds.

package engine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// plainCountTopology counts records per key, no gate: its one store is
// "counts", changelogged to <app>-counts-changelog.
func plainCountTopology(in, out string) *topology.Topology {
	tp := topology.New("counts")
	src := topology.Source(tp, in, serde.String(), serde.String())
	topology.To(topology.Count(src, "counts", serde.String()), out, serde.String(), serde.Int64())
	return tp
}

// lastCount returns the last count out holds for key (-1: none).
func lastCount(env *enginetest.Env, out, key string) int64 {
	got := int64(-1)
	for _, r := range env.Read(out) { // offset order; a key stays on one partition
		if string(r.Key) == key {
			got = int64(binary.BigEndian.Uint64(r.Value))
		}
	}
	return got
}

// A restore that begins while a changelog partition has a transaction
// open waits for it to end and includes it. The transaction here is
// another producer's; in production it is the previous owner's, committed
// (EndTxn returned, the group's offsets include it) but with its commit
// markers not yet on the changelog partition. A restore that read only to
// the last stable offset would miss it and go on from wrong state.
func TestRestoreWaitsForOpenChangelogTransaction(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	changelog := app + "-counts-changelog"
	env.CreateTopic(in, 1)
	g := compile(t, plainCountTopology(in, out))

	env.Produce(in, 0, 100) // key-0..key-49, twice each
	r1 := env.Start(stateConfig(env, app, "r1", t.TempDir()), g)
	env.WaitCount(out, 100, 60*time.Second)
	r1.Stop()

	// Another transactional producer sets key-0 to 1000 and keeps its
	// transaction open.
	txn, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID(app+"-other"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	value := binary.BigEndian.AppendUint64(nil, 1000)
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: changelog, Partition: 0, Key: []byte("key-0"), Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A new owner with no local state restores; the transaction commits
	// once the restore has seen it open.
	var once sync.Once
	committed := make(chan error, 1)
	cfg := stateConfig(env, app, "r2", t.TempDir())
	cfg.Hooks.RestoreWaiting = func(topic string, _ int32) {
		if topic != changelog {
			return
		}
		once.Do(func() { go func() { committed <- txn.EndTransaction(ctx, kgo.TryCommit) }() })
	}
	r2 := env.Start(cfg, g)
	env.Produce(in, 100, 1) // key-0 once more
	env.WaitCount(out, 101, 60*time.Second)
	r2.Stop()

	if got := lastCount(env, out, "key-0"); got != 1001 {
		t.Errorf("key-0 counted %d after the restore, want 1001 (the open transaction's 1000, plus one)", got)
	}
	select {
	case err := <-committed:
		if err != nil {
			t.Errorf("commit the other transaction: %v", err)
		}
	default:
		t.Errorf("the restore never waited for the open transaction")
	}
	if s := r2.E.Stats(); s.RestoreWaits != 1 {
		t.Errorf("r2 waited for open changelog transactions %d times, want 1", s.RestoreWaits)
	}
	if s, want := r2.E.Stats(), r1.E.Stats().ChangelogRecords+1; s.Restored != want {
		t.Errorf("r2 restored %d changelog records, want %d (r1's and the other transaction's)", s.Restored, want)
	}
}

// The state of a committed transaction fails to reach Pebble: the replica
// recreates its producer (whose InitProducerId waits for the transaction's
// commit markers) before it rewinds and restores the tail, and the counts
// equal a recount.
func TestFailedApplyRecreatesTheProducer(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	g := compile(t, plainCountTopology(in, out))
	cfg := stateConfig(env, app, "r1", t.TempDir())
	var failed atomic.Bool
	cfg.Hooks.ApplyError = func() error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("injected apply failure")
		}
		return nil
	}
	r := env.Start(cfg, g)
	env.Produce(in, 0, 500)
	env.WaitCount(out, 500, 60*time.Second)
	env.Produce(in, 500, 500)
	env.WaitCount(out, 1000, 60*time.Second)
	r.Stop()
	s := r.E.Stats()
	if !failed.Load() {
		t.Fatal("no apply failed: the test would test nothing")
	}
	if s.ProducerRecreations != 1 {
		t.Errorf("%d producer recreations after a failed apply, want 1", s.ProducerRecreations)
	}
	if s.Restored == 0 {
		t.Errorf("nothing restored after a failed apply: %+v", s)
	}
	env.VerifySources(in, out)
	checkCounts(t, env, in, out)
}

// A replica killed mid-transaction leaves it open on the changelog until
// the broker aborts it (the transaction timeout, plus the broker's abort
// check). Its offsets join a transaction only at commit, so nothing stops
// the next owner from processing and committing behind it; but a
// read_committed reader sees nothing past the open transaction's first
// record. When the task moves again before the abort, the new owner's
// restore must wait for the abort and include what was committed behind
// it, or every count it goes on from is short.
func TestRestoreIncludesCommitsBehindADeadProducersTransaction(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	changelog := app + "-counts-changelog"
	env.CreateTopic(in, 1)
	g := compile(t, plainCountTopology(in, out))

	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	r2.WaitReady(t, 60*time.Second)

	// The dead owner's transaction: one changelog record, never committed.
	dead, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID(app+"-dead"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := dead.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := dead.ProduceSync(ctx, &kgo.Record{Topic: changelog, Partition: 0, Key: []byte("key-0"), Value: binary.BigEndian.AppendUint64(nil, 1000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// The next owner commits behind it.
	env.Produce(in, 0, 100) // key-0..key-49, twice each
	env.WaitCount(out, 100, 60*time.Second)
	r2.Stop()

	// The task moves on; the broker aborts the dead transaction once the
	// restore has met it.
	var once sync.Once
	aborted := make(chan error, 1)
	cfg := stateConfig(env, app, "r3", t.TempDir())
	cfg.Hooks.RestoreWaiting = func(topic string, _ int32) {
		if topic == changelog {
			once.Do(func() { go func() { aborted <- dead.EndTransaction(ctx, kgo.TryAbort) }() })
		}
	}
	r3 := env.Start(cfg, g)
	env.Produce(in, 100, 1) // key-0 once more
	env.WaitCount(out, 101, 60*time.Second)
	r3.Stop()

	if got := lastCount(env, out, "key-0"); got != 3 {
		t.Errorf("key-0 counted %d after the move, want 3 (a restore that stopped at the open transaction restores nothing)", got)
	}
	select {
	case err := <-aborted:
		if err != nil {
			t.Errorf("abort the dead transaction: %v", err)
		}
	default:
		t.Errorf("the restore never waited for the open transaction")
	}
	if s, want := r3.E.Stats(), r2.E.Stats().ChangelogRecords; s.Restored != want {
		t.Errorf("r3 restored %d changelog records, want %d (r2's, none of the aborted transaction)", s.Restored, want)
	}
}

// A replica with no local state dies in the middle of restoring (here:
// after its first restored batch reached Pebble, before any other did).
// Restarted on the same state directory, it resumes each store from the
// offset it got to: nothing is wiped, no changelog record is restored
// twice, and the counts equal a recount.
func TestCrashMidRestoreResumesWithoutWipe(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 3)
	g := compile(t, countTopology(in, out)) // a dedup store and a count store
	env.Produce(in, 0, 3000)
	r1 := env.Start(stateConfig(env, app, "r1", t.TempDir()), g)
	env.WaitCount(out, 3000, 60*time.Second)
	r1.Stop()
	total := r1.E.Stats().ChangelogRecords

	dir := t.TempDir()
	var applied atomic.Int64 // records r2 got into Pebble: its first batch's only
	var calls atomic.Int64
	crashed := make(chan struct{})
	cfg := stateConfig(env, app, "r2", dir)
	cfg.Hooks.BeforeRestoreBatch = func(_ string, _ int32, records int, _ int64) error {
		switch calls.Add(1) {
		case 1:
			applied.Add(int64(records))
			return nil
		case 2:
			close(crashed)
		}
		return errors.New("injected crash in the middle of a restore")
	}
	r2 := env.Start(cfg, g)
	recv(t, "a restore to fail after its first batch", crashed, 60*time.Second)
	r2.Crash()

	r3 := env.Start(stateConfig(env, app, "r2", dir), g)
	env.Produce(in, 3000, 300)
	env.WaitCount(out, 3300, 60*time.Second)
	r3.Stop()
	s2, s3 := r2.E.Stats(), r3.E.Stats()
	if applied.Load() == 0 || applied.Load() >= total {
		t.Fatalf("r2 applied %d of %d changelog records before it crashed; the test needs a crash in the middle", applied.Load(), total)
	}
	if s2.Wipes != 0 || s3.Wipes != 0 {
		t.Errorf("wipes: %d before the crash, %d after; want none (a crash mid-restore must resume)", s2.Wipes, s3.Wipes)
	}
	if got := applied.Load() + s3.Restored; got != total {
		t.Errorf("restored %d records before the crash and %d after = %d; the changelog holds %d (each once)", applied.Load(), s3.Restored, got, total)
	}
	env.VerifySources(in, out)
	checkCounts(t, env, in, out)
}
