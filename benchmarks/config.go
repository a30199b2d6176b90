package benchmarks

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults of the zero Config fields.
const (
	DefaultRecords        = 100_000
	DefaultPartitions     = 6
	DefaultReplicas       = 1
	DefaultRepeats        = 3
	DefaultValueSize      = 100
	DefaultCommitInterval = 100 * time.Millisecond
	DefaultRunTimeout     = 10 * time.Minute
	DefaultLatencyWindow  = 20 * time.Second
)

// Config configures one benchmark run: every point of the sweep, every
// variant (onceflow in each guarantee, and the peers when asked), on one
// broker.
type Config struct {
	// Brokers of a running cluster. Default: none, an embedded broker is
	// started for the run (in this process: its CPU and memory count in
	// the in-process variants' figures).
	Brokers []string
	// Workloads by name (see Workloads). Default: copy.
	Workloads []string
	// Records per run. Default 100000.
	Records int
	// Partitions of every input topic. Default 6.
	Partitions int
	// Replicas of each variant, started in this process (peers that are
	// programs: one process each). Default 1.
	Replicas int
	// Threads of each replica: Kafka Streams' num.stream.threads. onceflow
	// drives each processor on one goroutine and offers no thread setting,
	// so its parallelism is processors: each replica runs as Threads
	// processors in this process, each a group member, as each Kafka
	// Streams thread is; the Go peers run Threads copy loops per replica
	// likewise. Default 1, both systems' default.
	Threads int
	// Repeats of each variant per sweep point. The order rotates: repeat i
	// starts at variant i mod n (eos, alos, peers; then alos, peers, eos;
	// ...); figures are medians with their spread. Default 3.
	Repeats int
	// CommitIntervals swept. Default: 100 ms.
	CommitIntervals []time.Duration
	// ValueSizes swept (bytes), for workloads whose values can be sized.
	// Default: 100.
	ValueSizes []int
	// CommitRecords is onceflow's early commit after that many records.
	// Default 0: the engine's default.
	CommitRecords int
	// Warmup is the records of one unmeasured throughput run of the first
	// variant before the first measured run (a broker that just started is
	// slow until its JIT has compiled the hot paths). Default 0: none.
	Warmup int
	// ColdRecords splits every throughput run: its window starts once this
	// many input records are committed, and the part from the first commit
	// to there is reported apart as the run's cold figures. Each run of
	// Kafka Streams is a fresh JVM that interprets and compiles its hot
	// paths for its first seconds; a warm-up run before it would warm
	// another JVM, so the warm-up has to be inside the run measured. Every
	// variant gets the same split, so all are measured over the same
	// records (and the same state sizes). Default 0: no split.
	ColdRecords int
	// Rate (records/s) of the latency runs, written at a steady pace.
	// Default 0: half the median maximum throughput of onceflow exactly-once
	// at the same sweep point. Negative: no latency runs.
	Rate int
	// Peers adds the peer variants of each workload.
	Peers bool
	// BrokerPids are the broker's processes on this machine (a real broker
	// started beside the bench): their CPU time inside each throughput
	// window is reported per million records beside the variant's own.
	// Default: none, not reported.
	BrokerPids []int
	// Variants, when set, runs only the variants with these names (eos,
	// alos, sarama, franz, kstreams_eos, kstreams_alos). Without eos, the
	// latency runs need a Rate.
	Variants []string
	// KStreamsJar is the Kafka Streams peer's jar. Default: built with
	// benchmarks/peers/kstreams/build.sh under Root.
	KStreamsJar string
	// Root is the repository root, where benchmarks/peers/ lives. Default ".".
	Root string
	// LatencyWindow bounds how long a latency run writes: it writes
	// min(Records, rate × LatencyWindow) records (a workload input of its
	// own, with its own truth), so a slow workload's latency run does not
	// take Records/rate. Default DefaultLatencyWindow.
	LatencyWindow time.Duration
	// RunTimeout bounds one run (writing excluded). Default 10 minutes.
	RunTimeout time.Duration
	// ProfileDir receives a CPU and an allocation profile of the first
	// throughput run of onceflow exactly-once at each sweep point. Default:
	// no profiles.
	ProfileDir string
	// OnPoint, when set, is called with the report so far after each sweep
	// point is measured (a long sweep's results survive an interruption).
	OnPoint func(*Report)
	// Progress receives a progress bar. Default nil: none.
	Progress io.Writer
	// Logger receives the harness's log lines. Default: none.
	Logger hclog.Logger
}

// Validate returns every problem at once.
func (c Config) Validate() error {
	var errs []error
	for _, w := range c.Workloads {
		if _, ok := workloads[w]; !ok {
			errs = append(errs, fmt.Errorf("bench: unknown workload %q (have %s)", w, workloadNames()))
		}
	}
	if c.Records < 0 {
		errs = append(errs, fmt.Errorf("bench: records %d is negative", c.Records))
	}
	if c.Partitions < 0 || c.Partitions > 1000 {
		errs = append(errs, fmt.Errorf("bench: partitions %d: want 1 to 1000", c.Partitions))
	}
	if c.Replicas < 0 || c.Replicas > 16 {
		errs = append(errs, fmt.Errorf("bench: replicas %d: want 1 to 16", c.Replicas))
	}
	if c.Threads < 0 || c.Threads > 16 {
		errs = append(errs, fmt.Errorf("bench: threads %d: want 1 to 16", c.Threads))
	}
	if c.Repeats < 0 || c.Repeats > 100 {
		errs = append(errs, fmt.Errorf("bench: repeats %d: want 1 to 100", c.Repeats))
	}
	for _, ci := range c.CommitIntervals {
		if ci < time.Millisecond || ci > time.Minute {
			errs = append(errs, fmt.Errorf("bench: commit interval %v: want 1ms to 1m", ci))
		}
	}
	for _, v := range c.ValueSizes {
		if v < 0 || v > 1_000_000 {
			errs = append(errs, fmt.Errorf("bench: value size %d: want 0 to 1000000", v))
		}
	}
	for _, v := range c.Variants {
		if !slices.Contains(variantOrder, v) {
			errs = append(errs, fmt.Errorf("bench: unknown variant %q (have %s)", v, strings.Join(variantOrder, ", ")))
		}
	}
	if len(c.Variants) > 0 && !slices.Contains(c.Variants, "eos") && c.Rate == 0 {
		errs = append(errs, errors.New("bench: without the eos variant the latency runs need a rate (or -1: none)"))
	}
	for _, pid := range c.BrokerPids {
		if pid <= 0 {
			errs = append(errs, fmt.Errorf("bench: broker pid %d: want a positive process id", pid))
		}
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("bench: warm-up records %d is negative", c.Warmup))
	}
	records := c.Records
	if records == 0 {
		records = DefaultRecords
	}
	if c.ColdRecords < 0 || records > 0 && c.ColdRecords >= records {
		errs = append(errs, fmt.Errorf("bench: cold records %d: want 0 to fewer than the records", c.ColdRecords))
	}
	if c.CommitRecords < 0 {
		errs = append(errs, fmt.Errorf("bench: commit records %d is negative", c.CommitRecords))
	}
	if c.LatencyWindow < 0 {
		errs = append(errs, fmt.Errorf("bench: latency window %v is negative", c.LatencyWindow))
	}
	if c.RunTimeout < 0 {
		errs = append(errs, fmt.Errorf("bench: run timeout %v is negative", c.RunTimeout))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if len(c.Workloads) == 0 {
		c.Workloads = []string{"copy"}
	}
	if c.Records == 0 {
		c.Records = DefaultRecords
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	if c.Threads == 0 {
		c.Threads = 1
	}
	if c.Repeats == 0 {
		c.Repeats = DefaultRepeats
	}
	if len(c.CommitIntervals) == 0 {
		c.CommitIntervals = []time.Duration{DefaultCommitInterval}
	}
	if len(c.ValueSizes) == 0 {
		c.ValueSizes = []int{DefaultValueSize}
	}
	if c.Root == "" {
		c.Root = "."
	}
	if c.LatencyWindow == 0 {
		c.LatencyWindow = DefaultLatencyWindow
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = DefaultRunTimeout
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Point is one point of the sweep.
type Point struct {
	Workload       string
	CommitInterval time.Duration
	// ValueSize is 0 for workloads whose values have their own size.
	ValueSize int
}

func (p Point) String() string {
	s := fmt.Sprintf("%s %v", p.Workload, p.CommitInterval)
	if p.ValueSize > 0 {
		s += fmt.Sprintf(" %dB", p.ValueSize)
	}
	return s
}

// Expand lists the sweep's points: workloads × commit intervals × value
// sizes, in that nesting order; a workload whose values cannot be sized
// gets one point per commit interval. Repeated values are dropped.
func Expand(workloadNames []string, intervals []time.Duration, sizes []int) []Point {
	var pts []Point
	seen := map[Point]bool{}
	add := func(p Point) {
		if !seen[p] {
			seen[p] = true
			pts = append(pts, p)
		}
	}
	for _, w := range workloadNames {
		sized := true
		if wl, ok := workloads[w]; ok {
			sized = wl.SizedValues()
		}
		for _, ci := range intervals {
			if !sized {
				add(Point{Workload: w, CommitInterval: ci})
				continue
			}
			for _, vs := range sizes {
				add(Point{Workload: w, CommitInterval: ci, ValueSize: vs})
			}
		}
	}
	return pts
}
