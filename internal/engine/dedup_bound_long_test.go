//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package engine_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/statestore"
	"github.com/onceflow/onceflow/topology"
)

// The dedup store of a steady stream of new event ids holds about one
// retention period of them, however long the stream runs: after 1, 2 and
// 4 periods of event time (records evenly spaced, stream time advancing
// with them) the entries left, and their bytes, stay at one period's
// worth, and everything older has expired (tombstones to the changelog).
// The figures are logged (go test -v); ONCEFLOW_DEDUP_SCALE=N multiplies
// the records per period.
func TestDedupStateIsBoundedByRetention(t *testing.T) {
	const retention = 50 * time.Second
	perPeriod := 5000
	if n, err := strconv.Atoi(os.Getenv("ONCEFLOW_DEDUP_SCALE")); err == nil && n > 0 {
		perPeriod *= n
	}
	spacing := retention / time.Duration(perPeriod)

	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	tp := topology.New("ids")
	src := topology.Source(tp, in, serde.String(), serde.Bytes())
	topology.To(topology.Dedup(src, "ids", topology.EventIDHeader("event-id"), retention), out, serde.String(), serde.Bytes())
	g := compile(t, tp)
	dir := t.TempDir()

	// Event time starts two hours back, so that four periods stay in the
	// past (stream time never runs ahead of the clock).
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	produce := func(from, to int) {
		for lo := from; lo < to; lo += 2000 {
			var rs []*kgo.Record
			for i := lo; i < min(lo+2000, to); i++ {
				rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k-%d", i%100), Value: fmt.Appendf(nil, "order %d", i),
					Timestamp: start.Add(time.Duration(i) * spacing),
					Headers:   []kgo.RecordHeader{{Key: "event-id", Value: fmt.Appendf(nil, "evt-%08d", i)}}})
			}
			env.ProduceRecords(rs...)
		}
	}

	var figures []dedupFigures
	var expired int64
	done := 0
	for _, periods := range dedupPeriods() {
		produce(done, periods*perPeriod)
		done = periods * perPeriod
		r := env.Start(stateConfig(env, app, "r1", dir), g)
		env.WaitCount(out, done, 60*time.Second)
		if err := r.Stop(); err != nil {
			t.Fatalf("run: %v", err)
		}
		expired += r.E.Stats().Expired
		f := measureDedup(t, dir, "ids", statestore.Task{SubTopology: 0, Partition: 0})
		f.periods, f.records = periods, done
		figures = append(figures, f)
		if int64(f.entries)+expired != int64(done) {
			t.Errorf("after %d periods: %d entries left and %d expired, want %d together", periods, f.entries, expired, done)
		}
	}

	t.Logf("retention %v of event time, %d new ids per period (one every %v), one task", retention, perPeriod, spacing)
	t.Logf("%8s %8s %8s %12s %14s %12s %12s", "periods", "records", "entries", "live bytes", "table estimate", "disk", "memtable")
	for _, f := range figures {
		t.Logf("%8d %8d %8d %12d %14d %12d %12d", f.periods, f.records, f.entries, f.live, f.estimate, f.disk, f.memtable)
	}
	first := figures[0]
	for _, f := range figures {
		// One period's ids, give or take the records of the last
		// transaction (expiry runs at each commit).
		if f.entries < perPeriod*9/10 || f.entries > perPeriod*11/10 {
			t.Errorf("after %d periods: %d dedup entries, want about %d (one period)", f.periods, f.entries, perPeriod)
		}
		if f.live > first.live*5/4 {
			t.Errorf("after %d periods: %d live bytes, over 1.25 times the %d after one", f.periods, f.live, first.live)
		}
	}
}
