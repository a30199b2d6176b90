package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// rekeyTopology moves every record through a repartition topic keyed by
// its value: <app>-moved-repartition.
func rekeyTopology(in, out string) *topology.Topology {
	tp := topology.New("rekey")
	src := topology.Source(tp, in, serde.String(), serde.String())
	byValue := topology.Process(src, "key-by-value", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		r.Key = r.Value
		return ctx.Forward(r)
	})
	moved := topology.Repartition(byValue, "moved", serde.String(), serde.String())
	topology.To(moved, out, serde.String(), serde.String())
	return tp
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// Repartition topics keep records until the reading sub-topology has
// committed past them (no retention of their own; one left by an earlier
// release with a retention gets none) and are purged up to the committed
// offsets, once per purge interval.
func TestRepartitionTopicsKeepRecordsAndArePurged(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	repartition := app + "-moved-repartition"
	env.CreateTopic(in, 2)
	// Created by an earlier release, with the broker's default retention.
	env.CreateTopic(repartition, 2)
	env.SetTopicConfig(repartition, "retention.ms", "604800000")
	clock := &fakeClock{}
	cfg := env.Config(app, "r1")
	cfg.Now = clock.now
	r := env.Start(cfg, compile(t, rekeyTopology(in, out)))

	env.Produce(in, 0, 200)
	env.WaitCount(out, 200, 60*time.Second)
	if v := env.TopicConfig(repartition, "retention.ms"); v != "-1" {
		t.Errorf("repartition topic retention.ms=%s, want -1", v)
	}
	if v := env.TopicConfig(repartition, "cleanup.policy"); v != "delete" {
		t.Errorf("repartition topic cleanup.policy=%s, want delete", v)
	}
	if s := r.E.Stats(); s.Purges != 0 {
		t.Errorf("%d purges before the purge interval passed, want none", s.Purges)
	}

	purged := func(min int64) func() bool {
		return func() bool {
			var n int64
			for _, o := range env.StartOffsets(repartition) {
				n += o
			}
			return n >= min
		}
	}
	clock.advance(engine.DefaultPurgeInterval + time.Second)
	env.Produce(in, 200, 200)
	env.WaitCount(out, 400, 60*time.Second)
	waitFor(t, "a purge of the repartition topic", 30*time.Second, purged(200))
	committed := env.CommittedOffsets(app, repartition)
	for p, start := range env.StartOffsets(repartition) {
		if start > committed[p] {
			t.Errorf("partition %d purged below %d, past its committed offset %d", p, start, committed[p])
		}
	}
	// The start offsets move when the leader deletes; the replica counts
	// the purge when DeleteRecords answers, after every replica did (on a
	// cluster, a while later).
	waitFor(t, "the purge to be counted", 30*time.Second, func() bool { return r.E.Stats().Purges >= 1 })
	if s := r.E.Stats(); s.Purges != 1 {
		t.Errorf("%d purges after the clock passed one interval, want 1", s.Purges)
	}
	r.Stop()
	env.VerifySources(in, out)
}

// Records of a repartition topic deleted before the reading sub-topology
// processed them: the replica stops with ErrInternalOffsetOutOfRange
// instead of silently starting from the oldest record left.
func TestDeletedRepartitionRecordsStopTheReplica(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	repartition := app + "-moved-repartition"
	env.CreateTopic(in, 1)
	g := compile(t, rekeyTopology(in, out))
	r := env.Start(env.Config(app, "r1"), g)
	env.Produce(in, 0, 100)
	env.WaitCount(out, 100, 60*time.Second)
	r.Stop()
	if v := env.TopicConfig(repartition, "retention.ms"); v != "-1" {
		t.Errorf("repartition topic created with retention.ms=%s, want -1", v)
	}

	// Records the first sub-topology wrote, deleted before they were read.
	for range 10 {
		env.ProduceRaw(repartition, []byte("k"), []byte("lost"))
	}
	ends := env.EndOffsets(repartition)
	env.DeleteRecords(repartition, ends)

	eng, err := engine.New(env.Config(app, "r1"), g)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, kafka.ErrInternalOffsetOutOfRange) {
			t.Errorf("Run returned %v, want ErrInternalOffsetOutOfRange", err)
		}
		t.Logf("Run: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		<-done
		t.Fatalf("the replica went on after records of %s it had not read were deleted (%d processed)", repartition, eng.Stats().RecordsIn)
	}
}
