package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/replicas"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// Config configures a chaos run. Exactly one of Brokers, ClusterDir and
// Embedded says where the brokers are.
type Config struct {
	// Brokers is a bootstrap list to run against; no broker faults.
	Brokers []string
	// ClusterDir is the ONCEFLOW_KAFKA_DIR of a running cluster of
	// `scripts/kafka.sh up --brokers N`: its bootstrap list is used
	// (unless Brokers is set) and its brokers are killed and restarted.
	ClusterDir string
	// KafkaScript is the path of scripts/kafka.sh (with ClusterDir).
	// Default "scripts/kafka.sh".
	KafkaScript string
	// Embedded runs against an embedded broker started for the run; no
	// broker faults.
	Embedded bool

	// Topology is the topology the replicas run: TopologyOrders (the
	// default) or TopologyAllStages, every kind of stage with two webhook
	// sinks delivered to a receiver of the run's own that is not
	// idempotent.
	Topology string

	// Duration is how long faults are injected. Default 60 s.
	Duration time.Duration
	// Rate is the input rate in records per second. Default 1000. The run
	// writes Rate × Duration records.
	Rate float64
	// Seed seeds the faults and the input. Default 0, a seed like any other.
	Seed int64
	// MinInterval and MaxInterval bound the pause between two faults
	// (uniform). Defaults 2 s and 8 s.
	MinInterval, MaxInterval time.Duration
	// SessionTimeout is the replicas' group session timeout (the default
	// of `onceflow run`); a paused replica stays stopped this long plus
	// 5 s. Default 10 s.
	SessionTimeout time.Duration
	// DrainTimeout bounds the wait, after the last fault, until all input
	// is committed. Default 3 minutes.
	DrainTimeout time.Duration
	// Faults names the fault kinds to inject, from FaultKinds. They are
	// dealt like a shuffled deck (seeded): each round injects every entry
	// once, so a kind named twice comes twice as often. Default: all that
	// apply (broker-kill only with ClusterDir, request-fault only with
	// Embedded).
	Faults []string

	// Chart, when set, is the path of an SVG chart of committed input
	// records per second over the run, with the faults marked.
	Chart string

	// ReplicaArgs are appended to every replica's command line (say
	// "--guarantee=at_least_once", to see the check fail). Default none.
	ReplicaArgs []string

	// Executable is the onceflow binary the replicas run. Default: this
	// process's own executable.
	Executable string
	// WorkDir is where the run's directory (replica logs and state) is
	// created. Default os.TempDir(). It is kept when the run fails, and
	// removed otherwise unless KeepLogs.
	WorkDir  string
	KeepLogs bool
	// Progress receives a line per fault and per step. Default: none.
	Progress io.Writer
	// Logger: default none.
	Logger hclog.Logger
}

// The fault kinds.
const (
	FaultReplicaKill  = "replica-kill"
	FaultReplicaPause = "replica-pause"
	FaultBrokerKill   = "broker-kill"
	// FaultNetwork disturbs the connections between one replica and one
	// broker (latency, a hang, resets) through a proxy in the path.
	FaultNetwork = "network"
	// FaultRequest makes the embedded broker answer a replica's Produce,
	// EndTxn or TxnOffsetCommit requests with errors or late.
	FaultRequest = "request-fault"
	// FaultOperator writes the operator's commands for the sinks'
	// parked deliveries (`sinks unknown resolve`, `dlq redrive`), then
	// SIGKILLs a replica (allstages only).
	FaultOperator = "operator-command"
)

// FaultKinds lists every fault kind.
var FaultKinds = []string{FaultReplicaKill, FaultReplicaPause, FaultBrokerKill, FaultNetwork, FaultRequest, FaultOperator}

const (
	replicaCount = 3
	partitions   = 6
)

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	where := 0
	for _, set := range []bool{len(c.Brokers) > 0 && c.ClusterDir == "", c.ClusterDir != "", c.Embedded} {
		if set {
			where++
		}
	}
	switch c.Topology {
	case "", TopologyOrders, TopologyAllStages:
	default:
		errs = append(errs, fmt.Errorf("chaos: unknown topology %q (want %s or %s)", c.Topology, TopologyOrders, TopologyAllStages))
	}
	if where != 1 {
		errs = append(errs, errors.New("chaos: want exactly one of brokers, a cluster directory or the embedded broker"))
	}
	if c.Duration < 0 || c.Rate < 0 || c.MinInterval < 0 || c.MaxInterval < c.MinInterval || c.DrainTimeout < 0 || c.SessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("chaos: durations and rate must not be negative and the maximum interval not below the minimum"))
	}
	for _, f := range c.Faults {
		switch f {
		case FaultReplicaKill, FaultReplicaPause, FaultNetwork:
		case FaultBrokerKill:
			if c.ClusterDir == "" {
				errs = append(errs, errors.New("chaos: broker-kill needs a cluster directory"))
			}
		case FaultRequest:
			if !c.Embedded {
				errs = append(errs, errors.New("chaos: request-fault needs the embedded broker"))
			}
		case FaultOperator:
			if c.Topology != TopologyAllStages {
				errs = append(errs, errors.New("chaos: operator-command needs the allstages topology"))
			}
		default:
			errs = append(errs, fmt.Errorf("chaos: unknown fault %q (want one of %v)", f, FaultKinds))
		}
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() (Config, error) {
	if c.Duration == 0 {
		c.Duration = time.Minute
	}
	if c.Rate == 0 {
		c.Rate = 1000
	}
	if c.MinInterval == 0 && c.MaxInterval == 0 {
		c.MinInterval, c.MaxInterval = 2*time.Second, 8*time.Second
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 3 * time.Minute
	}
	if c.Topology == "" {
		c.Topology = TopologyOrders
	}
	if c.KafkaScript == "" {
		c.KafkaScript = "scripts/kafka.sh"
	}
	if len(c.Faults) == 0 {
		c.Faults = []string{FaultReplicaKill, FaultReplicaPause, FaultNetwork}
		if c.ClusterDir != "" {
			c.Faults = append(c.Faults, FaultBrokerKill)
		}
		if c.Embedded {
			c.Faults = append(c.Faults, FaultRequest)
		}
		if c.Topology == TopologyAllStages {
			c.Faults = append(c.Faults, FaultOperator)
		}
	}
	if c.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("chaos: own executable: %w", err)
		}
		c.Executable = exe
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c, nil
}

// Run runs the chaos test. It returns an error when the run could not be
// carried out; a run that found lost or doubled records returns a Result
// with OK false and no error.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if cfg, err = cfg.withDefaults(); err != nil {
		return Result{}, err
	}
	dir, err := os.MkdirTemp(cfg.WorkDir, "onceflow-chaos-")
	if err != nil {
		return Result{}, fmt.Errorf("chaos: %w", err)
	}
	res.Dir, res.Topology = dir, cfg.Topology
	defer func() {
		if err == nil && res.OK && !cfg.KeepLogs {
			os.RemoveAll(dir)
			res.Dir = ""
		}
	}()
	r := &runner{cfg: cfg, dir: dir, res: &res, rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6368616f73))}
	defer r.close()
	if err := r.setup(ctx); err != nil {
		return res, err
	}
	if err := r.run(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// runner holds one run's brokers, clients and replicas.
type runner struct {
	cfg Config
	dir string
	res *Result
	rnd *rand.Rand

	brokers  []string
	embedded *embedded.Broker
	cluster  *cluster
	cl       *kgo.Client
	adm      *kadm.Client
	reps     []*replicas.Replica
	watch    *watcher
	net      *network       // with network faults
	reqs     *requestFaults // with request faults
	deck     []string       // fault kinds still to deal this round
	aims     []string       // broker-kill aims still to deal this round

	app, input, output, rejected string
	inputs                       []string // the input topics the watcher follows

	// allstages
	prefix    string
	hook      *hook
	commanded map[string]sinkadmin.Command // the last command the run wrote for each key
	views     map[string]*sinkadmin.View   // each sink's ledger and dead letters, read as they grow
}

// setup starts or opens the brokers, creates the input topic and starts
// the replicas.
func (r *runner) setup(ctx context.Context) error {
	cfg := r.cfg
	r.brokers = cfg.Brokers
	replication := int16(-1) // the cluster's default
	switch {
	case cfg.Embedded:
		b, err := embedded.Start(embedded.Config{Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("chaos: %w", err)
		}
		r.embedded, r.brokers, replication = b, b.Addrs(), 1
	case cfg.ClusterDir != "":
		c, boot, err := openCluster(cfg.ClusterDir, cfg.KafkaScript)
		if err != nil {
			return err
		}
		r.cluster = c
		if len(r.brokers) == 0 {
			r.brokers = boot
		}
	}
	r.res.Brokers = r.brokers
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...))
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	r.cl, r.adm = cl, kadm.NewClient(cl)

	run := strconv.FormatInt(time.Now().Unix(), 36)
	r.app = "chaos-" + run
	r.rejected = r.app + "-rejected"
	var base []string
	if cfg.Topology == TopologyAllStages {
		if base, err = r.setupAllStages(ctx, replication); err != nil {
			return err
		}
	} else {
		r.input, r.output = r.app+"-orders", r.app+"-totals"
		r.inputs = []string{r.input}
		resp, err := r.adm.CreateTopic(ctx, partitions, replication, nil, r.input)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("chaos: create %s: %w", r.input, err)
		}
		base = []string{"run", "orders", "--input", r.input, "--output", r.output}
	}
	if slices.Contains(cfg.Faults, FaultRequest) {
		r.reqs = newRequestFaults(r.embedded.Cluster(), cfg.Seed)
	}
	if slices.Contains(cfg.Faults, FaultNetwork) {
		brokers, err := listBrokers(ctx, r.adm)
		if err != nil {
			return err
		}
		r.net = newNetwork(brokers)
	}
	base = append(base, "--brokers", strings.Join(r.brokers, ","), "--app-id", r.app)
	base = append(base, cfg.ReplicaArgs...)
	for i := range replicaCount {
		name := fmt.Sprintf("replica-%d", i+1)
		args := slices.Clone(base)
		if r.net != nil {
			via, err := r.net.dialVia(name)
			if err != nil {
				return err
			}
			args = append(args, "--dial-via", via)
		}
		rep, err := replicas.New(replicas.Spec{Executable: cfg.Executable, Args: args, Dir: r.dir, Name: name})
		if err != nil {
			return err
		}
		r.reps = append(r.reps, rep)
		if err := rep.Start(); err != nil {
			return err
		}
	}
	fmt.Fprintf(cfg.Progress, "brokers %s; app %s; topology %s; %d replicas; logs and state in %s\n", strings.Join(r.brokers, ","), r.app, cfg.Topology, replicaCount, r.dir)
	return nil
}

// close stops the replicas and the clients and the embedded broker.
func (r *runner) close() {
	replicas.StopAll(20*time.Second, r.reps...)
	if r.cl != nil {
		r.cl.Close()
	}
	if r.net != nil {
		r.net.close()
	}
	if r.hook != nil {
		r.hook.close()
	}
	if r.embedded != nil {
		r.embedded.Close()
	}
}

// startWatch starts the watcher; the function it returns stops it and
// waits for it (more calls do nothing).
func (r *runner) startWatch(ctx context.Context, start time.Time) (stop func()) {
	r.watch = newWatcher(r.adm, r.brokers, r.app, r.inputs, r.reps, start, r.cfg.Logger.Named("watch"))
	wctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		r.watch.run(wctx, time.Second)
		close(watched)
	}()
	return func() {
		cancel()
		<-watched
	}
}

// collectWatch copies what the watcher saw into the result.
func (r *runner) collectWatch() {
	r.res.LongestStallSeconds, r.res.LongestStallPartition = r.watch.longestStall()
	r.res.MaxOldestPendingSeconds = r.watch.maxOldestPending()
	r.res.Throughput = r.watch.throughput()
	if r.net != nil {
		r.res.ProxiedConnections = r.net.accepted()
	}
}

// run produces, injects faults for the duration, drains and verifies.
func (r *runner) run(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Topology == TopologyAllStages {
		return r.runAllStages(ctx)
	}
	events := max(int(cfg.Rate*cfg.Duration.Seconds()), 1)
	pctx, cancelProduce := context.WithCancel(ctx)
	defer cancelProduce()
	type produced struct {
		truth gen.Truth
		err   error
	}
	done := make(chan produced, 1)
	go func() {
		t, err := gen.ProduceOrders(pctx, gen.OrdersConfig{Brokers: r.brokers, Topic: r.input, Events: events, Partitions: partitions,
			DuplicateRate: gen.DefaultDuplicateRate, ConflictRate: gen.DefaultConflictRate, OutOfOrderRate: gen.DefaultOutOfOrderRate,
			Seed: cfg.Seed, Rate: cfg.Rate, Logger: cfg.Logger.Named("producer")})
		done <- produced{t, err}
	}()
	fmt.Fprintf(cfg.Progress, "writing %d order events to %s at %.0f/s (10%% duplicates, 1%% conflicts, 5%% out of order); faults %v for %v\n",
		events, r.input, cfg.Rate, cfg.Faults, cfg.Duration)

	start := time.Now()
	stopWatch := r.startWatch(ctx, start)
	defer stopWatch()

	if err := r.inject(ctx, start, start.Add(cfg.Duration)); err != nil {
		return err
	}
	r.res.FaultSeconds = time.Since(start).Seconds()
	var p produced
	select {
	case p = <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.err != nil {
		return fmt.Errorf("chaos: produce: %w", p.err)
	}
	fmt.Fprintf(cfg.Progress, "faults done after %.1fs; input written; waiting (at most %v) until all %d records are committed\n",
		r.res.FaultSeconds, cfg.DrainTimeout, events)
	if err := r.drain(ctx, events); err != nil {
		return err
	}
	r.res.Seconds = time.Since(start).Seconds()
	stopWatch()
	r.collectWatch()
	replicas.StopAll(20*time.Second, r.reps...)
	fmt.Fprintf(cfg.Progress, "all input committed %.1fs after the start; verifying read_committed\n", r.res.Seconds)
	if err := r.verify(ctx, p.truth); err != nil {
		return err
	}
	if cfg.Chart != "" {
		return WriteChart(*r.res, cfg.Chart)
	}
	return nil
}

// drain waits until the group's committed offsets on the input add up to
// events, bounded by the drain timeout. Replicas that exit are restarted
// (and counted as exits) so the drain can finish.
func (r *runner) drain(ctx context.Context, events int) error {
	deadline := time.Now().Add(r.cfg.DrainTimeout)
	for {
		n, err := r.watch.committed(ctx)
		if err == nil && n >= events {
			return nil
		}
		if err := r.restartExited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			r.res.Violations = append(r.res.Violations, fmt.Sprintf("only %d of %d input records committed after the drain timeout %v", n, events, r.cfg.DrainTimeout))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// restartExited starts again every replica that exited on its own (not by
// a fault), counting it.
func (r *runner) restartExited() error {
	for _, rep := range r.reps {
		if rep.Exited() {
			r.res.UnexpectedExits++
			fmt.Fprintf(r.cfg.Progress, "%s exited on its own (see %s); starting it again\n", rep.Name, rep.LogPath)
			if err := rep.Start(); err != nil {
				return err
			}
		}
	}
	return nil
}

// verify checks the topics against the truth and fills the result.
func (r *runner) verify(ctx context.Context, truth gen.Truth) error {
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rep, err := verify.CheckTruth(vctx, r.brokers, truth, r.input, r.output, r.rejected)
	if err != nil {
		return fmt.Errorf("chaos: verify: %w", err)
	}
	res := r.res
	res.Truth = rep
	res.Events, res.Accepted = rep.Input, rep.Output
	res.Lost, res.Duplicated, res.Unexpected = rep.Missing, rep.Duplicates, rep.Unexpected
	if !rep.OK {
		res.Violations = append(res.Violations, "verify: "+rep.String())
	}
	res.OK = len(res.Violations) == 0
	return nil
}
