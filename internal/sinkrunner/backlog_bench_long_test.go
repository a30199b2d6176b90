//go:build long

package sinkrunner_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// backlogRunners are the runner counts BenchmarkBacklog measures.
var backlogRunners = []int{1, 3}

var (
	backlogRecords = flag.Int("backlog.records", 20000, "BenchmarkBacklog: delivery requests in the main outbox")
	backlogLatency = flag.Duration("backlog.latency", 3*time.Millisecond, "BenchmarkBacklog: the receiver's time per request")
	backlogNetwork = flag.Duration("backlog.network", 5*time.Millisecond, "BenchmarkBacklog: latency added each way between the runners and the broker")
)

// backlogReceiver is a downstream that is not idempotent, shared by the
// runners of a benchmark: each request takes latency, about one attempt in
// twenty is answered 503 (transient, nothing applied), the others are
// applied; a key applied twice is a violation.
type backlogReceiver struct {
	latency time.Duration
	mu      sync.Mutex
	applied map[string]int
	by      map[string]int // effects by runner and sink ("a/line")
	unavail int
}

// backlogSink is one runner's way into the receiver.
type backlogSink struct {
	r      *backlogReceiver
	runner string
}

func (s backlogSink) Idempotent() bool { return false }

func (s backlogSink) Deliver(ctx context.Context, d sinks.Delivery) error {
	t := time.NewTimer(s.r.latency)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return sinks.UnknownError(ctx.Err())
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if roll(d.IdempotencyKey, d.Attempt) < 5 {
		s.r.unavail++
		return sinks.TransientError(errors.New("503 unavailable"), 0)
	}
	s.r.applied[d.IdempotencyKey]++
	s.r.by[s.runner+"/"+d.Sink]++
	return nil
}

func (r *backlogReceiver) counts() (applied, doubled int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.applied {
		if n > 1 {
			doubled++
		}
	}
	return len(r.applied), doubled
}

// backlogTopology has two sinks, as the allstages topology has: "line"
// (the main outbox) and "tick" (a small one).
func backlogTopology(in string, s sinks.Sink) *topology.Topology {
	tp := topology.New("backlog")
	src := topology.Source(tp, in, serde.String(), serde.String())
	topology.ToSink(src, "line", s, serde.String(), nil)
	topology.ToSink(src, "tick", s, serde.String(), nil)
	return tp
}

// BenchmarkBacklog measures how fast sink runners work off an outbox
// backlog, the shape the allstages topology leaves after faults: a main
// outbox of 6 partitions with -backlog.records requests under 40 record
// keys (deliveries of one key go one at a time), a small second outbox of
// 6 partitions, a receiver that is not idempotent (so every delivery
// writes the ledger twice) with -backlog.latency per request and 5 % 503s,
// and -backlog.network added each way between the runners and the broker
// (the embedded broker answers in microseconds; a replicated cluster's
// acknowledgements take milliseconds).
// With 3 runners, one starts alone and the other two join once it
// delivers, as after a fault. It reports effects/s, ledger batches/s,
// ledger writes per batch and the writer's busy share, and logs the final
// assignment. Each run takes a minute or more: run it with -benchtime=1x.
//
//	go test -tags long -run '^$' -bench Backlog -benchtime=1x ./internal/sinkrunner/
func BenchmarkBacklog(b *testing.B) {
	for _, n := range backlogRunners {
		b.Run(fmt.Sprintf("runners=%d", n), func(b *testing.B) {
			for range b.N {
				runBacklog(b, n)
			}
		})
	}
}

func runBacklog(b *testing.B, runners int) {
	b.StopTimer()
	env := enginetest.New(b)
	app, in := env.Name("backlog"), env.Name("in")
	line, tick := app+"-sink-line", app+"-sink-tick"
	env.CreateTopic(line, 6)
	env.CreateTopic(tick, 6)
	const ticks = 200
	total := *backlogRecords + ticks
	var recs []*kgo.Record
	for i := range *backlogRecords {
		recs = append(recs, &kgo.Record{Topic: line, Key: fmt.Appendf(nil, "item-%02d", i%40), Value: fmt.Appendf(nil, "line-%d", i)})
	}
	for i := range ticks {
		recs = append(recs, &kgo.Record{Topic: tick, Key: fmt.Appendf(nil, "tick-%d", i%6), Value: fmt.Appendf(nil, "tick-%d", i)})
	}
	for c := range slices.Chunk(recs, 2000) {
		env.ProduceRecords(c...)
	}
	proxy := testproxy.New()
	defer proxy.Close()
	proxy.SetLatency(*backlogNetwork)
	recv := &backlogReceiver{latency: *backlogLatency, applied: map[string]int{}, by: map[string]int{}}

	var started []*sinkrunner.Runner
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		wg.Wait()
	}()
	start := func(name string) {
		g, err := graph.Compile(backlogTopology(in, backlogSink{r: recv, runner: name}))
		if err != nil {
			b.Fatal(err)
		}
		ecfg := env.Config(app, name)
		ecfg.Client.Dial = proxy.Dial
		r, err := sinkrunner.New(sinkrunner.Config{Client: ecfg.Client, Timeouts: ecfg.Timeouts, AppID: app, InstanceID: name,
			Logger: hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Warn})}, g.WithPrefix(app))
		if err != nil {
			b.Fatal(err)
		}
		started = append(started, r)
		wg.Go(func() {
			if err := r.Run(ctx); err != nil {
				b.Errorf("runner %s: %v", name, err)
			}
		})
	}
	wait := func(what string, ok func() bool) {
		deadline := time.Now().Add(10 * time.Minute)
		for !ok() {
			if time.Now().After(deadline) {
				b.Fatalf("no %s within 10 minutes", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	b.StartTimer()
	t0 := time.Now()
	start("a")
	if runners > 1 {
		wait("first effects", func() bool { n, _ := recv.counts(); return n >= 500 })
		for i := 1; i < runners; i++ {
			start(string(rune('a' + i)))
		}
	}
	// A delivery whose attempt was recorded as out when its runner lost
	// the partition (a join ends the generation) is parked as unknown by
	// the next owner, not sent again: settled, but not applied.
	parked := func() (n int64) {
		for _, r := range started {
			for _, st := range r.Status() {
				n += st.Outcomes[sinkrunner.OutcomeUnknown] + st.Outcomes[sinkrunner.OutcomeDeadLettered]
			}
		}
		return n
	}
	wait("every request settled", func() bool { n, _ := recv.counts(); return int64(n)+parked() >= int64(total) })
	elapsed := time.Since(t0)
	b.StopTimer()

	assigned := formatAssignment(groupAssignment(b, env, app+"-sinks"))
	applied, doubled := recv.counts()
	var st sinkrunner.Stats
	for _, r := range started {
		s := r.Stats()
		st.LedgerBatches += s.LedgerBatches
		st.LedgerWrites += s.LedgerWrites
		st.LedgerBusy += s.LedgerBusy
		st.LedgerAcked += s.LedgerAcked
		st.LedgerApplied += s.LedgerApplied
	}
	recv.mu.Lock()
	by, unavail := maps.Clone(recv.by), recv.unavail
	recv.mu.Unlock()
	if doubled > 0 {
		b.Errorf("%d keys applied twice at the receiver that is not idempotent", doubled)
	}
	secs := elapsed.Seconds()
	b.ReportMetric(float64(applied)/secs, "effects/s")
	b.ReportMetric(float64(st.LedgerBatches)/secs, "batches/s")
	b.ReportMetric(float64(st.LedgerWrites)/float64(max(st.LedgerBatches, 1)), "writes/batch")
	b.ReportMetric(100*st.LedgerBusy.Seconds()/secs/float64(runners), "writer-busy-%")
	per := func(d time.Duration) time.Duration {
		return (d / time.Duration(max(st.LedgerBatches, 1))).Round(10 * time.Microsecond)
	}
	b.Logf("%d runners: %d effects and %d parked in %v (%d 503s), %d ledger batches, %d writes, per batch %v (acknowledged %v, Pebble %v); effects by runner/sink %v; assignment %s",
		runners, applied, parked(), elapsed.Round(time.Millisecond), unavail, st.LedgerBatches, st.LedgerWrites,
		per(st.LedgerBusy), per(st.LedgerAcked), per(st.LedgerApplied), by, assigned)
}
