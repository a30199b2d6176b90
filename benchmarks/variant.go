package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/onceflow/onceflow/processor"
)

// A Variant is one system under test: onceflow in one guarantee, or a peer.
type Variant interface {
	// Name is the variant's key in results: eos, alos, sarama, franz,
	// kstreams_eos, kstreams_alos.
	Name() string
	// ExactlyOnce reports whether the variant promises exactly-once output
	// (its check is then exact).
	ExactlyOnce() bool
	// Available returns why the variant cannot run on this bench, or nil.
	Available(env *Env) error
	// Start starts the variant's replicas on spec and returns at once.
	Start(ctx context.Context, spec RunSpec) (Running, error)
}

// RunSpec is what one run of a variant needs.
type RunSpec struct {
	Env            *Env
	Workload       Workload
	App            string // consumer group, application id, transactional id prefix
	Input, Output  string
	CommitInterval time.Duration
	CommitRecords  int // onceflow only; 0: the engine's default
	Replicas       int
	Threads        int    // per replica (Config.Threads)
	StateDir       string // the run's own directory, removed after it
	Logger         hclog.Logger
}

// Running is a started variant.
type Running interface {
	// Done is closed when the variant ended by itself (a failure).
	Done() <-chan struct{}
	// Stop stops every replica, waits for them and returns the first
	// error of any.
	Stop() error
	// Pids are the processes the variant runs in; nil: this process.
	Pids() []int
}

// TxnStats are a variant's transaction figures, for variants that can
// report them (Running implementing TxnStatser).
type TxnStats struct {
	Transactions   int64   `json:"transactions"`
	CommitP50Ms    float64 `json:"commit_p50_ms"`
	CommitP99Ms    float64 `json:"commit_p99_ms"`
	CommitMeanMs   float64 `json:"commit_mean_ms"`
	RecordsPerTxn  float64 `json:"records_per_txn"`
	FromHistograms bool    `json:"from_histograms,omitempty"` // p50/p99 interpolated in histogram buckets
}

// TxnStatser is implemented by Running values that count transactions.
type TxnStatser interface{ TxnStats() TxnStats }

// Env is what every run on one bench shares.
type Env struct {
	Brokers  []string
	Embedded bool
	Root     string
	Logger   hclog.Logger

	kstreamsJar  string
	kstreamsOnce sync.Once
	kstreamsErr  error
}

// onceflowVariant is onceflow itself, in one guarantee.
type onceflowVariant struct{ g processor.Guarantee }

func (v onceflowVariant) Name() string {
	if v.g == processor.ExactlyOnce {
		return "eos"
	}
	return "alos"
}

func (v onceflowVariant) ExactlyOnce() bool    { return v.g == processor.ExactlyOnce }
func (v onceflowVariant) Available(*Env) error { return nil }

func (v onceflowVariant) Start(ctx context.Context, spec RunSpec) (Running, error) {
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(ctx)
	r := &goRunning{cancel: cancel, done: make(chan struct{}), gather: reg}
	var procs []*processor.Processor
	// onceflow's parallelism is processors, one driver goroutine each:
	// a replica of Threads threads is Threads processors.
	for i := range spec.Replicas * max(spec.Threads, 1) {
		p, err := processor.New(processor.Config{
			Brokers:        spec.Env.Brokers,
			ApplicationID:  spec.App,
			InstanceID:     fmt.Sprintf("r%d", i+1),
			Guarantee:      v.g,
			CommitInterval: spec.CommitInterval,
			CommitRecords:  spec.CommitRecords,
			StateDir:       filepath.Join(spec.StateDir, fmt.Sprintf("r%d", i+1)),
			Logger:         spec.Logger.Named(fmt.Sprintf("r%d", i+1)),
			Registerer:     reg,
		}, spec.Workload.Topology(spec.Input, spec.Output))
		if err != nil {
			cancel()
			return nil, err
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		r.goRun(ctx, p.Run)
	}
	return r, nil
}

// goRunning runs replicas as goroutines of this process.
type goRunning struct {
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	mu     sync.Mutex
	err    error
	gather prometheus.Gatherer // onceflow's metrics, when set
	stats  func() TxnStats     // a peer's own figures, when set
	closer func()              // runs after every replica returned
}

// goRun runs one replica; a replica that returns before Stop fails the run.
func (r *goRunning) goRun(ctx context.Context, run func(context.Context) error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := run(ctx)
		if err == nil && ctx.Err() == nil {
			err = errors.New("replica stopped by itself")
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			r.mu.Lock()
			if r.err == nil {
				r.err = err
			}
			r.mu.Unlock()
		}
		if ctx.Err() == nil {
			r.once.Do(func() { close(r.done) })
		}
	}()
}

func (r *goRunning) Done() <-chan struct{} { return r.done }
func (r *goRunning) Pids() []int           { return nil }

func (r *goRunning) Stop() error {
	r.cancel()
	r.wg.Wait()
	if r.closer != nil {
		r.closer()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *goRunning) TxnStats() TxnStats {
	if r.stats != nil {
		return r.stats()
	}
	if r.gather == nil {
		return TxnStats{}
	}
	mfs, err := r.gather.Gather()
	if err != nil {
		return TxnStats{}
	}
	var s TxnStats
	for _, mf := range mfs {
		switch mf.GetName() {
		case "onceflow_commit_latency_seconds":
			buckets, count, sum := mergeHistograms(mf.GetMetric())
			s.Transactions = int64(count)
			if count > 0 {
				s.CommitMeanMs = 1000 * sum / float64(count)
				s.CommitP50Ms = 1000 * HistogramQuantile(0.5, buckets)
				s.CommitP99Ms = 1000 * HistogramQuantile(0.99, buckets)
				s.FromHistograms = true
			}
		case "onceflow_records_per_transaction":
			_, count, sum := mergeHistograms(mf.GetMetric())
			if count > 0 {
				s.RecordsPerTxn = sum / float64(count)
			}
		}
	}
	return s
}

// mergeHistograms adds up the histograms of every series (one per replica)
// into one cumulative bucket list ending with +Inf.
func mergeHistograms(ms []*dto.Metric) (buckets []Bucket, count uint64, sum float64) {
	byBound := map[float64]uint64{}
	var bounds []float64
	for _, m := range ms {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		count += h.GetSampleCount()
		sum += h.GetSampleSum()
		for _, b := range h.GetBucket() {
			ub := b.GetUpperBound()
			if _, ok := byBound[ub]; !ok {
				bounds = append(bounds, ub)
			}
			byBound[ub] += b.GetCumulativeCount()
		}
	}
	slices.Sort(bounds)
	for _, ub := range bounds {
		buckets = append(buckets, Bucket{UpperBound: ub, Count: byBound[ub]})
	}
	if len(buckets) == 0 || !math.IsInf(buckets[len(buckets)-1].UpperBound, 1) {
		buckets = append(buckets, Bucket{UpperBound: math.Inf(1), Count: count})
	}
	return buckets, count, sum
}
