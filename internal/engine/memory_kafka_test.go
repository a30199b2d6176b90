//go:build kafka

package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// slowConn delays every request of the given API keys by delay before
// sending it: a slow output cluster, as the replica sees it. (sarama
// writes each request in one Write, its header first: size, API key.)
type slowConn struct {
	net.Conn
	delay time.Duration
	keys  map[int16]bool
}

func (c slowConn) Write(b []byte) (int, error) {
	if len(b) >= 6 && c.keys[int16(binary.BigEndian.Uint16(b[4:6]))] {
		time.Sleep(c.delay) // the fault: a slow link
	}
	return c.Conn.Write(b)
}

// slowOutput dials connections whose produce and transaction requests
// (Produce, AddPartitionsToTxn, TxnOffsetCommit, EndTxn) each wait delay.
func slowOutput(delay time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	keys := map[int16]bool{0: true, 24: true, 28: true, 26: true}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return slowConn{Conn: c, delay: delay, keys: keys}, nil
	}
}

// memSample is the process's memory at one moment of a run.
type memSample struct {
	at   time.Duration
	out  int64  // records the replica has produced (committed)
	live uint64 // Go heap after a GC: what the process holds
	rss  uint64 // resident set size
}

// liveHeap is the Go heap in use right after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rss reads VmRSS from /proc/self/status (0 where there is none).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// A backlog larger than the replica's buffers, in one partition, copied to
// an output cluster that answers every produce and transaction request
// late: the replica's memory stays flat while it works through the backlog
// and under a bound that does not depend on the backlog (backpressure: it
// reads input only as fast as the output takes it). Before, its buffers
// were bounded in records only (64 batches of 512, and sarama's thousands
// per producer stage), so with 16 KiB records the live heap rose over
// 600 MiB for a 375 MiB backlog. Needs a real broker (the embedded one
// keeps every record in this process's heap, which would hide the
// replica's). The figures are logged (go test -v); ONCEFLOW_MEM_SCALE=N
// multiplies the backlog.
func TestMemoryStaysBoundedWithASlowOutput(t *testing.T) {
	if os.Getenv("ONCEFLOW_KAFKA_BROKERS") == "" {
		t.Skip("needs a real broker (the embedded one holds the data in this process's heap): set ONCEFLOW_KAFKA_BROKERS")
	}
	for _, tc := range []struct {
		name    string
		records int
		size    int
	}{
		{"1KiB records", 160_000, 1 << 10},
		{"16KiB records", 16_000, 16 << 10},
	} {
		if n, err := strconv.Atoi(os.Getenv("ONCEFLOW_MEM_SCALE")); err == nil && n > 0 {
			tc.records *= n // a longer run, to see whether the peak follows the backlog
		}
		t.Run(tc.name, func(t *testing.T) { memoryWithSlowOutput(t, tc.records, tc.size, 30*time.Millisecond) })
	}
}

// memoryBound is what the replica may hold above its idle heap, whatever
// the backlog: batches waiting for the engine (64 of at most
// kafka.MaxBatchBytes), the open transaction's records in the producer (up
// to maxTxnBytes), sarama's per-partition buffer (1024 records) and fetch
// responses, with room for the collector's timing. Measured (backlogs of
// 156 to 375 MiB): about 65 MiB with 1 KiB records, 105 MiB with 16 KiB.
const memoryBound = 160 << 20

func memoryWithSlowOutput(t *testing.T, records, size int, delay time.Duration) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	bigInput(env, in, 1)
	rnd := rand.NewChaCha8([32]byte{1})
	chunk := max(1, 2<<20/size) // a batch within the input's 4 MiB
	for from := 0; from < records; from += chunk {
		rs := make([]*kgo.Record, 0, chunk)
		for i := from; i < min(from+chunk, records); i++ {
			v := make([]byte, size) // random: no compression shrinks the backlog
			rnd.Read(v)
			rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k-%d", i%100), Value: v})
		}
		env.ProduceLarge(rs...)
	}
	backlog := uint64(records) * uint64(size)
	base := liveHeap()
	t.Logf("backlog %d records of %d bytes (%.0f MiB) in one partition; produce and transaction requests delayed %v; live heap before %.1f MiB",
		records, size, mibs(backlog), delay, mibs(base))

	cfg := env.Config(app, "r1")
	cfg.CommitInterval = 100 * time.Millisecond // the processor's defaults
	cfg.CommitRecords = 50_000
	cfg.Client.Dial = slowOutput(delay)
	start := time.Now()
	r := env.Start(cfg, compile(t, copyex.Topology(in, out)))

	var (
		mu      sync.Mutex
		samples []memSample
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			s := memSample{at: time.Since(start), out: r.E.Stats().RecordsOut, live: liveHeap(), rss: rss()}
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		}
	}()
	waitFor(t, "the backlog copied", 5*time.Minute, func() bool { return r.E.Stats().RecordsOut >= int64(records) })
	close(stop)
	<-sampled
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}

	var peak memSample
	for i, s := range samples {
		if s.live > peak.live {
			peak = s
		}
		if i%8 == 0 || i == len(samples)-1 {
			t.Logf("%6.1fs  out %7d  live heap %6.1f MiB  rss %6.1f MiB", s.at.Seconds(), s.out, mibs(s.live), mibs(s.rss))
		}
	}
	// Flat: the heap in the last third of the run is no higher than in
	// the first third (plus slack for the collector's timing), and the
	// peak above the start is a small part of the backlog.
	third := len(samples) / 3
	early, late := maxLive(samples[:third]), maxLive(samples[len(samples)-third:])
	grown := peak.live - min(peak.live, base)
	t.Logf("peak live heap %.1f MiB at %.1fs (%.1f MiB above the start, backlog %.0f MiB); max first third %.1f MiB, last third %.1f MiB; %.0f records/s",
		mibs(peak.live), peak.at.Seconds(), mibs(grown), mibs(backlog), mibs(early), mibs(late), float64(records)/samples[len(samples)-1].at.Seconds())
	if third < 4 {
		t.Fatalf("only %d samples: the run was too short to tell", len(samples))
	}
	if late > early+16<<20 {
		t.Errorf("the live heap grew while the backlog was copied: %.1f MiB early, %.1f MiB late", mibs(early), mibs(late))
	}
	if grown > memoryBound {
		t.Errorf("the live heap rose %.1f MiB above the start (backlog %.0f MiB), over the %.0f MiB bound", mibs(grown), mibs(backlog), mibs(memoryBound))
	}
	if got := len(env.Read(out)); got != records {
		t.Errorf("output has %d records, want %d", got, records)
	}
}

func maxLive(ss []memSample) uint64 {
	var m uint64
	for _, s := range ss {
		m = max(m, s.live)
	}
	return m
}

func mibs(b uint64) float64 { return float64(b) / (1 << 20) }
