package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/receiver"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/httpsink"
	"github.com/onceflow/onceflow/topology"
)

// SinksConfig configures BenchSinks: the HTTP sink delivering an outbox
// to the webhook receiver, which answers each request after Delay, at
// each parallelism (deliveries of one outbox partition out at once, each
// for another record key).
type SinksConfig struct {
	// Brokers of the cluster. Required.
	Brokers []string
	// Deliveries per run. Default 50,000.
	Deliveries int
	// SerialDeliveries is the number of deliveries of a run at
	// parallelism 1 (one attempt out per partition: slow). Default 3,000.
	SerialDeliveries int
	// Keys is the number of distinct record keys (deliveries of one key
	// go one after the other). Default 10,000.
	Keys int
	// Partitions of the outbox topic. Default 6.
	Partitions int
	// Parallelism values to run, in order. Default 1, 16, 64.
	Parallelism []int
	// Delay is the receiver's answer time. Default 20 ms.
	Delay time.Duration
	// Profile, when set, is a directory to write a CPU profile of each
	// run into (sinks-p<parallelism>.cpu.pprof).
	Profile string
	// Timeout bounds one run. Default 10 minutes.
	Timeout time.Duration
	// Logger; nil: none.
	Logger hclog.Logger
}

func (c SinksConfig) withDefaults() SinksConfig {
	if c.Deliveries == 0 {
		c.Deliveries = 50000
	}
	if c.SerialDeliveries == 0 {
		c.SerialDeliveries = 3000
	}
	if c.Keys == 0 {
		c.Keys = 10000
	}
	if c.Partitions == 0 {
		c.Partitions = 6
	}
	if len(c.Parallelism) == 0 {
		c.Parallelism = []int{1, 16, 64}
	}
	if c.Delay == 0 {
		c.Delay = 20 * time.Millisecond
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// SinksRun is the result of one run.
type SinksRun struct {
	Parallelism int     `json:"parallelism"`
	Deliveries  int     `json:"deliveries"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"deliveries_per_second"`
	// InFlightBound is parallelism × partitions: at most that many
	// attempts out; Delay bounds the rate at InFlightBound / Delay.
	InFlightBound int     `json:"in_flight_bound"`
	Ceiling       float64 `json:"ceiling_per_second"`
	Requests      int64   `json:"requests"`
}

// SinksReport is the result of BenchSinks.
type SinksReport struct {
	DelayMS    float64    `json:"delay_ms"`
	Partitions int        `json:"partitions"`
	Keys       int        `json:"keys"`
	Runs       []SinksRun `json:"runs"`
	// Speedup is each run's rate over the first run's (parallelism 1 by
	// default), measured in one process on one broker.
	Speedup []float64 `json:"speedup"`
}

// BenchSinks measures deliveries/s of the sink runner with the HTTP sink
// against the in-process webhook receiver, one run per parallelism. Each
// run writes its deliveries to a fresh outbox first, then starts a
// replica with only the sink runner and times it from ready (group
// joined, ledgers restored) until the receiver has applied every one.
func BenchSinks(ctx context.Context, cfg SinksConfig) (*SinksReport, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("benchmarks: sinks: no brokers")
	}
	rep := &SinksReport{DelayMS: float64(cfg.Delay) / float64(time.Millisecond), Partitions: cfg.Partitions, Keys: cfg.Keys}
	for _, par := range cfg.Parallelism {
		n := cfg.Deliveries
		if par == 1 {
			n = min(n, cfg.SerialDeliveries)
		}
		run, err := sinksRun(ctx, cfg, par, n)
		if err != nil {
			return rep, err
		}
		cfg.Logger.Info("sinks run", "parallelism", par, "deliveries", n, "per_second", int(run.PerSecond))
		rep.Runs = append(rep.Runs, run)
	}
	for _, r := range rep.Runs {
		rep.Speedup = append(rep.Speedup, r.PerSecond/rep.Runs[0].PerSecond)
	}
	return rep, nil
}

func sinksRun(ctx context.Context, cfg SinksConfig, par, n int) (SinksRun, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	app := fmt.Sprintf("bench-sinks-%d-p%d", time.Now().UnixNano(), par)
	outbox := app + "-sink-hook"
	if err := writeOutbox(ctx, cfg, outbox, n); err != nil {
		return SinksRun{}, err
	}

	rcv, err := receiver.New(receiver.Config{Delay: cfg.Delay})
	if err != nil {
		return SinksRun{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return SinksRun{}, fmt.Errorf("benchmarks: sinks: %w", err)
	}
	rctx, stopReceiver := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = rcv.Serve(rctx, ln) }()
	defer func() { stopReceiver(); <-served }()
	hook, err := httpsink.New(httpsink.Config{URL: "http://" + ln.Addr().String() + "/hook"})
	if err != nil {
		return SinksRun{}, err
	}
	tp := topology.New(app)
	topology.ToSink(topology.Source(tp, app+"-in", serde.String(), serde.String()), "hook", hook, serde.String(), nil)
	dir, err := os.MkdirTemp("", "onceflow-bench-sinks-")
	if err != nil {
		return SinksRun{}, fmt.Errorf("benchmarks: sinks: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := processor.New(processor.Config{Brokers: cfg.Brokers, ApplicationID: app, InstanceID: "bench", OnlySinks: true, StateDir: dir,
		Logger: cfg.Logger, Sinks: sinks.RunnerConfig{Parallelism: par, MaxBuffered: max(1024, 4*par)}}, tp)
	if err != nil {
		return SinksRun{}, err
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	defer func() { stop(); <-done }()

	for !p.Ready() {
		if err := pause(ctx, 5*time.Millisecond); err != nil {
			return SinksRun{}, fmt.Errorf("benchmarks: sinks: not ready: %w", err)
		}
	}
	if cfg.Profile != "" {
		f, err := os.Create(filepath.Join(cfg.Profile, "sinks-p"+strconv.Itoa(par)+".cpu.pprof"))
		if err != nil {
			return SinksRun{}, fmt.Errorf("benchmarks: sinks: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err == nil {
			defer pprof.StopCPUProfile()
		}
	}
	start := time.Now()
	for rcv.Stats().Effects < int64(n) {
		if err := pause(ctx, 5*time.Millisecond); err != nil {
			return SinksRun{}, fmt.Errorf("benchmarks: sinks: %d of %d delivered: %w", rcv.Stats().Effects, n, err)
		}
	}
	took := time.Since(start)
	st := rcv.Stats()
	bound := par * cfg.Partitions
	return SinksRun{Parallelism: par, Deliveries: n, Seconds: took.Seconds(), PerSecond: float64(n) / took.Seconds(),
		InFlightBound: bound, Ceiling: float64(bound) / cfg.Delay.Seconds(), Requests: st.Requests}, nil
}

// writeOutbox creates the outbox topic and writes n delivery requests,
// keyed over cfg.Keys keys, each with its idempotency key.
func writeOutbox(ctx context.Context, cfg SinksConfig, topic string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return fmt.Errorf("benchmarks: sinks: %w", err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(cfg.Partitions), -1, nil, topic); err != nil {
		return fmt.Errorf("benchmarks: sinks: create %s: %w", topic, err)
	}
	errs := make(chan error, 1)
	for i := range n {
		r := &kgo.Record{Key: []byte("key-" + strconv.Itoa(i%cfg.Keys)), Value: fmt.Appendf(nil, `{"n":%d}`, i),
			Headers: []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: []byte("hook:" + strconv.Itoa(i))}}}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("benchmarks: sinks: write outbox: %w", err)
	}
	select {
	case err := <-errs:
		return fmt.Errorf("benchmarks: sinks: write outbox: %w", err)
	default:
		return nil
	}
}

func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
