package benchmarks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
)

// committed returns how many records of topic the group has committed
// (the sum of its committed offsets). A partition whose fetch failed keeps
// its previous value in last.
func committed(ctx context.Context, adm *kadm.Client, group, topic string, last map[int32]int64) (int64, error) {
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return 0, err
	}
	for p, o := range resp[topic] {
		if o.Err == nil && o.At >= 0 {
			last[p] = o.At
		}
	}
	var sum int64
	for _, v := range last {
		sum += v
	}
	return sum, nil
}

// endOffsets returns each partition's high watermark.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %q: %w", topic, err)
	}
	ends := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends, nil
}

// cpuTime is the CPU time (user + system) of pids, or of this process when
// pids is nil.
func cpuTime(pids []int) time.Duration {
	if pids == nil {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) in parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * (time.Second / clockTicks)
	}
	return total
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every
// Linux this runs on).
const clockTicks = 100

// resetPeakRSS resets the peak resident set size of pids (nil: this
// process), so the next peakRSS reads the peak from now. It reports
// whether the kernel allowed it.
func resetPeakRSS(pids []int) bool {
	ok := true
	for _, p := range pidPaths(pids) {
		if err := os.WriteFile(p+"/clear_refs", []byte("5"), 0); err != nil {
			ok = false
		}
	}
	return ok
}

// peakRSS is the sum of the peak resident set sizes of pids (nil: this
// process), in bytes.
func peakRSS(pids []int) int64 {
	var total int64
	for _, p := range pidPaths(pids) {
		total += statusKB(p+"/status", "VmHWM:") * 1024
	}
	return total
}

func pidPaths(pids []int) []string {
	if pids == nil {
		return []string{"/proc/self"}
	}
	var ps []string
	for _, p := range pids {
		ps = append(ps, fmt.Sprintf("/proc/%d", p))
	}
	return ps
}

func statusKB(path, field string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			fs := strings.Fields(rest)
			if len(fs) > 0 {
				n, _ := strconv.ParseInt(fs[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// outputReader reads a topic read_committed from its start, counting data
// records and, when latency is on, recording each record's visibility
// delay: the time it was returned to this reader minus its timestamp.
type outputReader struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu struct {
		sync.Mutex
		records   int64
		next      map[int32]int64 // offset after the last record seen, control records included
		latencies []time.Duration
		err       error
	}
}

func startOutputReader(ctx context.Context, brokers []string, topic string, latency bool) (*outputReader, error) {
	cl, err := kgo.NewClient(append(clientcfg.Options(brokers, "onceflow-bench-reader", nil),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(25*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("bench: output reader: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &outputReader{cl: cl, cancel: cancel, done: make(chan struct{})}
	r.mu.next = map[int32]int64{}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			r.mu.Lock()
			fs.EachError(func(t string, p int32, err error) {
				if !errors.Is(err, context.Canceled) && r.mu.err == nil {
					r.mu.err = fmt.Errorf("bench: read %s/%d: %w", t, p, err)
				}
			})
			fs.EachRecord(func(rec *kgo.Record) {
				r.mu.next[rec.Partition] = rec.Offset + 1
				if rec.Attrs.IsControl() || isWarmup(rec) {
					return
				}
				r.mu.records++
				if latency {
					r.mu.latencies = append(r.mu.latencies, now.Sub(rec.Timestamp))
				}
			})
			r.mu.Unlock()
		}
	}()
	return r, nil
}

// reached reports whether the reader got to ends on every partition.
func (r *outputReader) reached(ends map[int32]int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, e := range ends {
		if e > 0 && r.mu.next[p] < e {
			return false
		}
	}
	return true
}

// readTo waits until the reader got to the topic's end, read again until it
// no longer moves (a commit marker written after the first look).
func (r *outputReader) readTo(ctx context.Context, adm *kadm.Client, topic string) error {
	var prev map[int32]int64
	for {
		ends, err := endOffsets(ctx, adm, topic)
		if err != nil {
			return err
		}
		for !r.reached(ends) {
			if err := r.failure(); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("bench: reading %s to its end: %w", topic, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
		if sameOffsets(prev, ends) {
			return nil
		}
		prev = ends
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func sameOffsets(a, b map[int32]int64) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for p, v := range a {
		if b[p] != v {
			return false
		}
	}
	return true
}

func (r *outputReader) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.err
}

// stop ends the reader and returns its count and latencies.
func (r *outputReader) stop() (int64, []time.Duration) {
	r.cancel()
	<-r.done
	r.cl.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.records, r.mu.latencies
}

// warmupHeader marks the records a latency run writes before its input to
// see the variant consume and commit on every partition, through the whole
// topology (Workload.WarmupRecord). They are not counted or timed: their
// outputs keep the header, and the output reader skips them.
const warmupHeader = "onceflow-bench-warmup"

func isWarmup(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == warmupHeader {
			return true
		}
	}
	return false
}

// warmup writes one warm-up record to each partition of topic.
func warmup(ctx context.Context, brokers []string, topic string, partitions int, wl Workload) error {
	cl, err := kgo.NewClient(append(clientcfg.Options(brokers, "onceflow-bench-warmup", nil),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return fmt.Errorf("bench: warm-up: %w", err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for p := range partitions {
		r := wl.WarmupRecord(p)
		r.Partition = int32(p)
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: warmupHeader, Value: []byte("1")})
		rs = append(rs, r)
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("bench: warm-up: %w", err)
	}
	return nil
}

// newWriter is the input writer: franz-go's idempotent producer, acks=all,
// records spread by the key hash (murmur2, as Kafka's Java clients).
func newWriter(brokers []string, topic string, linger time.Duration) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append(clientcfg.Options(brokers, "onceflow-bench-writer", nil),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(linger),
		kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.MaxBufferedRecords(100_000),
	)...)
	if err != nil {
		return nil, fmt.Errorf("bench: writer: %w", err)
	}
	return cl, nil
}

// write writes every record of in to the writer's topic. With rate > 0 it
// paces them (records/s, in slices of 2 ms) and stamps each with the time
// it was handed over; otherwise it writes as fast as it can. It returns
// once all are acknowledged, with the time from the first to the last
// hand-over.
func write(ctx context.Context, cl *kgo.Client, in Input, rate int) (time.Duration, error) {
	var (
		mu       sync.Mutex
		firstErr error
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	began := time.Now()
	n := in.Len()
	for i := 0; i < n; {
		if ctx.Err() != nil {
			break
		}
		batch := n - i
		if rate > 0 {
			due := int(time.Since(began).Seconds() * float64(rate))
			if due <= i {
				time.Sleep(2 * time.Millisecond)
				continue
			}
			batch = min(due-i, n-i)
		}
		now := time.Now()
		for j := range batch {
			r := in.Record(i + j)
			if rate > 0 {
				r.Timestamp = now
			}
			cl.Produce(ctx, r, promise)
		}
		i += batch
	}
	handed := time.Since(began)
	if err := cl.Flush(ctx); err != nil {
		return handed, fmt.Errorf("bench: write: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return handed, fmt.Errorf("bench: write: %w", firstErr)
	}
	return handed, ctx.Err()
}
