package engine_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/gen"
)

// BenchmarkCopy measures one replica copying pre-produced records on the
// embedded broker, in each guarantee. Run with -benchtime=Nx for N records
// per iteration; compare the two sub-benchmarks of one run.
func BenchmarkCopy(b *testing.B) {
	for _, eos := range []bool{true, false} {
		name := map[bool]string{true: "exactly_once", false: "at_least_once"}[eos]
		b.Run(name, func(b *testing.B) {
			env := enginetest.New(b)
			in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
			env.CreateTopic(in, 6)
			for i := 0; i < b.N; i += 10000 {
				env.Produce(in, i, min(10000, b.N-i))
			}
			cfg := env.Config(app, "r1")
			cfg.ExactlyOnce = eos
			cfg.CommitInterval = 100 * time.Millisecond
			cfg.CommitRecords = 10000
			b.ResetTimer()
			r := env.Start(cfg, compile(&testing.T{}, copyex.Topology(in, out)))
			waitRecordsIn(r.E, b.N)
			b.StopTimer()
			r.Stop()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.Logf("%s: %+v", name, r.E.Stats())
		})
	}
}

// BenchmarkOrders measures one replica of the orders topology (dedup,
// version gate, totals, Pebble state) on pre-produced order events:
// throughput, process CPU per event (the embedded broker's included) and
// changelog records per event.
func BenchmarkOrders(b *testing.B) {
	for _, eos := range []bool{true, false} {
		name := map[bool]string{true: "exactly_once", false: "at_least_once"}[eos]
		b.Run(name, func(b *testing.B) {
			env := enginetest.New(b)
			in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
			if _, err := gen.ProduceOrders(context.Background(), gen.OrdersConfig{Brokers: env.Brokers, Topic: in, Events: b.N,
				DuplicateRate: 0.1, ConflictRate: 0.01, OutOfOrderRate: 0.05, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			cfg := env.Config(app, "r1")
			cfg.ExactlyOnce = eos
			cfg.StateDir = b.TempDir()
			cfg.CommitInterval = 100 * time.Millisecond
			cfg.CommitRecords = 10000
			g, err := graph.Compile(orders.Topology(in, out))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu0 := processCPU(b)
			r := env.Start(cfg, g)
			waitRecordsIn(r.E, b.N)
			cpu := processCPU(b) - cpu0
			b.StopTimer()
			r.Stop()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			// The embedded broker runs in this process: its CPU is in
			// cpu-ns/event, and each changelog record costs on both sides.
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/event")
			s := r.E.Stats()
			b.ReportMetric(float64(s.ChangelogRecords)/float64(b.N), "changelog-records/event")
		})
	}
}

// benchPoll is how often a benchmark looks at the replica's counters. Each
// look reads every collector behind Stats (a goroutine and a channel per
// collector); at one look per millisecond that cost, on the CPU the replica
// runs on, took a measurable share of a copy benchmark's throughput. At
// 10 ms the end of a run is known to within a few thousand records of a
// run of millions.
const benchPoll = 10 * time.Millisecond

// processCPU is the process's user and system CPU time so far, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// waitRecordsIn waits until e has committed at least n input records
// (records are counted when their transaction commits).
func waitRecordsIn(e *engine.Engine, n int) {
	for e.Stats().RecordsIn < int64(n) {
		time.Sleep(benchPoll)
	}
}
