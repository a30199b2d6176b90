package engine_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	enginetest.WaitFor(t, what, within, cond)
}

func recv(t *testing.T, what string, ch <-chan struct{}, within time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(within):
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// tickTopology forwards, every 50 ms of wall clock and per task, one
// record "<tag>:<n>" (n counted in a store) stamped with the firing time.
func tickTopology(in, out, tag string) *topology.Topology {
	tp := topology.New("ticks")
	src := topology.Source(tp, in, serde.String(), serde.String())
	ticks := topology.Store(tp, "ticks", serde.String(), serde.Int64())
	ticked := topology.Process(src, "ticker", func(topology.Context[string, string], topology.Record[string, string]) error {
		return nil
	}, ticks)
	topology.Punctuate(ticked, topology.WallClockTime, 50*time.Millisecond, func(ctx topology.Context[string, string], at time.Time) error {
		n, _, err := ticks.Get(ctx, "n")
		if err != nil {
			return err
		}
		if err := ticks.Put(ctx, "n", n+1); err != nil {
			return err
		}
		return ctx.Forward(topology.Record[string, string]{Key: tag, Value: fmt.Sprintf("%s:%d", tag, n+1), Timestamp: at})
	})
	topology.To(ticked, out, serde.String(), serde.String())
	return tp
}

// Kafka API keys of group membership.
const (
	keyJoinGroup int16 = 11
	keyHeartbeat int16 = 12
)

// A punctuation-only transaction names its tasks' positions unchanged: on
// partitions the group has no offset for yet it commits their log start,
// and the input that arrives later is read once, from there, across a
// restart.
func TestPunctuationKeepsPositions(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 3)
	env.CreateTopic(out, 1)
	// A log start above zero, with no committed offset: the position is
	// the log start, not zero.
	env.Produce(in, 0, 30)
	env.DeleteRecords(in, env.EndOffsets(in))
	start := env.StartOffsets(in)

	g := compile(t, tickTopology(in, out, "r"))
	r := env.Start(env.Config(app, "r1"), g)
	waitFor(t, "ticks", 60*time.Second, func() bool { return len(env.Read(out)) >= 10 })
	if got := env.CommittedOffsets(app, in); !maps.Equal(got, start) {
		t.Errorf("after punctuations only, committed offsets %v, want the log start %v", got, start)
	}
	env.Produce(in, 30, 100)
	waitFor(t, "the input", 60*time.Second, func() bool { return r.E.Stats().RecordsIn >= 100 })
	// More punctuation-only transactions after the input: two ticks of
	// each of the three tasks committed.
	ticks := len(env.Read(out))
	waitFor(t, "more punctuations after the input", 60*time.Second, func() bool { return len(env.Read(out)) >= ticks+6 })
	r.Stop()
	if got := r.E.Stats().RecordsIn; got != 100 {
		t.Errorf("read %d records, want 100", got)
	}
	if got, want := env.CommittedOffsets(app, in), env.EndOffsets(in); !maps.Equal(got, want) {
		t.Errorf("committed offsets %v, want the end offsets %v", got, want)
	}
	r = env.Start(env.Config(app, "r1"), g)
	waitFor(t, "ticks after the restart", 60*time.Second, func() bool { return r.E.Stats().Committed >= 5 })
	r.Stop()
	if got := r.E.Stats().RecordsIn; got != 0 {
		t.Errorf("the restart read %d records again, want 0", got)
	}
}
