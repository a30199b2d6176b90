package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onceflow/onceflow/benchmarks"
)

// BenchCmd is `onceflow bench`.
type BenchCmd struct {
	Brokers        []string        `name:"brokers" short:"b" env:"ONCEFLOW_BROKERS" placeholder:"HOST:PORT" help:"Seed brokers of the cluster to measure on (default: an embedded broker started for the run)."`
	Workload       []string        `name:"workload" short:"w" default:"copy" help:"Workloads, comma-separated (copy, orders, pageviews)."`
	Records        int             `name:"records" short:"n" default:"100000" help:"Records per run."`
	CommitInterval []time.Duration `name:"commit-interval" default:"100ms" help:"Commit intervals to sweep, comma-separated (e.g. 10ms,100ms,1s)."`
	ValueSize      []int           `name:"value-size" default:"100" help:"Value sizes in bytes to sweep, comma-separated (copy; orders values have their own size)."`
	Partitions     int             `name:"partitions" default:"6" help:"Partitions of every input topic."`
	Replicas       int             `name:"replicas" default:"1" help:"Replicas of each variant, in this process (Kafka Streams: one process each)."`
	Threads        int             `name:"threads" default:"1" help:"Threads of each replica: Kafka Streams' num.stream.threads; onceflow (one driver goroutine per processor) runs that many processors per replica in this process, the Go peers that many copy loops."`
	Repeats        int             `name:"repeats" default:"3" help:"Runs of each variant per point; repeat i starts at variant i mod n (EOS, ALOS, peers; then ALOS, peers, EOS; ...); figures are medians with their spread."`
	Rate           int             `name:"rate" default:"0" help:"Records/s of the latency runs, written at a steady rate (0: half the measured exactly-once maximum)."`
	NoLatency      bool            `name:"no-latency" help:"Skip the latency runs (throughput only)."`
	LatencyWindow  time.Duration   `name:"latency-window" default:"20s" help:"A latency run writes at its rate for at most this long (min(--records, rate × window) records)."`
	Warmup         int             `name:"warmup" default:"200000" help:"Records of one unmeasured run before the first measured one, so a freshly started broker is warm (0: none)."`
	ColdRecords    int             `name:"cold-records" default:"0" help:"Start each throughput run's window once this many records are committed; the part before is reported apart as its cold figures (a fresh Kafka Streams JVM compiles its hot paths there). Every variant gets the same split (0: none)."`
	CommitRecords  int             `name:"commit-records" default:"0" help:"onceflow's early commit after this many records (0: the engine's default)."`
	Peers          bool            `name:"peers" help:"Also run the peers: sarama's transactional copy loop (the client's floor), franz-go's GroupTransactSession loop, and Kafka Streams (only with --brokers)."`
	Variants       []string        `name:"variants" help:"Run only these variants, comma-separated (eos, alos, sarama, franz, kstreams_eos, kstreams_alos)."`
	BrokerPids     []int           `name:"broker-pids" placeholder:"PID" help:"The broker's processes on this machine (e.g. the pid in scripts/kafka.sh's broker.pid): their CPU per million records in each throughput run is reported beside the variant's own."`
	KStreamsJar    string          `name:"kstreams-jar" type:"path" help:"The Kafka Streams peer's jar (default: built with benchmarks/peers/kstreams/build.sh)."`
	JSON           bool            `name:"json" help:"Print one JSON object instead of tables."`
	Out            string          `name:"out" type:"path" placeholder:"DIR" help:"Write results.json and chart.svg (and chart.png) into DIR."`
	Profile        string          `name:"profile" type:"path" placeholder:"DIR" help:"Write CPU and allocation profiles of the first throughput run of onceflow (and of the sarama loop) at each point into DIR."`
	RunTimeout     time.Duration   `name:"run-timeout" default:"10m" help:"Give up on a run that has not caught up after this long."`
	NoProgress     bool            `name:"no-progress" help:"Do not show a progress bar on stderr."`
}

// Validate rejects flags that contradict each other.
func (c *BenchCmd) Validate() error {
	if c.Rate < 0 {
		return fmt.Errorf("--rate %d is negative (--no-latency skips the latency runs)", c.Rate)
	}
	if c.NoLatency && c.Rate != 0 {
		return fmt.Errorf("--rate and --no-latency exclude each other")
	}
	return nil
}

// Run runs the bench and prints the report.
func (c *BenchCmd) Run(env *Env) error {
	rate := c.Rate
	if c.NoLatency {
		rate = -1
	}
	var progress io.Writer = env.Stderr
	if c.NoProgress {
		progress = nil
	}
	rep, err := benchmarks.Run(env.Ctx, benchmarks.Config{
		Brokers:         ClientFlags{Brokers: c.Brokers}.BrokerList(),
		Workloads:       splitList(c.Workload),
		Records:         c.Records,
		Partitions:      c.Partitions,
		Replicas:        c.Replicas,
		Threads:         c.Threads,
		Repeats:         c.Repeats,
		CommitIntervals: c.CommitInterval,
		ValueSizes:      c.ValueSize,
		CommitRecords:   c.CommitRecords,
		Warmup:          c.Warmup,
		ColdRecords:     c.ColdRecords,
		LatencyWindow:   c.LatencyWindow,
		Rate:            rate,
		Peers:           c.Peers,
		Variants:        splitList(c.Variants),
		BrokerPids:      c.BrokerPids,
		KStreamsJar:     c.KStreamsJar,
		RunTimeout:      c.RunTimeout,
		ProfileDir:      c.Profile,
		Progress:        progress,
		OnPoint: func(rep *benchmarks.Report) {
			if c.Out == "" {
				return
			}
			if err := benchmarks.WriteOut(rep, c.Out); err != nil {
				env.Logger.Warn("writing the results so far", "error", err)
			}
		},
		Logger: env.Logger,
	})
	if err != nil {
		return err
	}
	if c.Out != "" {
		if err := benchmarks.WriteOut(rep, c.Out); err != nil {
			return err
		}
	}
	if c.JSON {
		if err := rep.WriteJSON(env.Stdout); err != nil {
			return err
		}
	} else {
		if err := rep.WriteTable(env.Stdout); err != nil {
			return err
		}
		if c.Out != "" {
			fmt.Fprintf(env.Stdout, "results in %s\n", c.Out)
		}
	}
	if problems := rep.OnceflowProblems(); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(env.Stderr, "onceflow: bench: %s\n", p)
		}
		return errCheckFailed
	}
	return nil
}

func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// BenchTargetsCmd is `onceflow bench-targets`.
type BenchTargetsCmd struct {
	Dir string `arg:"" type:"existingdir" help:"The full run's directory (scripts/bench-full.sh writes one step per subdirectory)."`
}

// Run computes the targets from the run's results, writes DIR/TARGETS.md
// and prints it.
func (c *BenchTargetsCmd) Run(env *Env) error {
	ts, err := benchmarks.EvaluateTargets(c.Dir)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := benchmarks.WriteTargets(&b, c.Dir, ts); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "TARGETS.md"), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("bench-targets: %w", err)
	}
	_, err = env.Stdout.Write(b.Bytes())
	return err
}
