package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/replicas"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// ErrCheckFailed is returned when a scenario ran to its end and one of its
// checks failed (its output says which).
var ErrCheckFailed = errors.New("scenario: a check failed")

// Names lists the scenarios.
var Names = []string{"orders", "pageviews", "poison", "sinks", "cli"}

// Defaults returns a scenario's default records and kills.
func Defaults(name string) (records, kills int) {
	switch name {
	case "orders":
		return 500000, 3
	case "pageviews":
		return 1000000, 2
	case "poison":
		return 100000, 0
	case "sinks", "cli":
		return 200000, 2
	}
	return 0, 0
}

// Config configures a scenario run.
type Config struct {
	// Brokers to run against. Default: an embedded broker in this process.
	Brokers []string
	// Records and Kills: the input records (events, views) and how many
	// times a replica is SIGKILLed and restarted. Required (see Defaults);
	// poison kills nothing.
	Records int
	Kills   int
	// Executable is the onceflow binary the replicas run. Default: this
	// process's own executable.
	Executable string
	// WorkDir is where the run's directory (logs, truth, reports) is
	// created; it is kept, the replicas' state in it removed at the end.
	// Default os.TempDir().
	WorkDir string
	// Out receives the steps and figures. Default: none.
	Out io.Writer
	// Logger: default none.
	Logger hclog.Logger

	// MaxSessions (poison) is the most sessions a replica may start.
	// Default 6.
	MaxSessions int
	// Guarantees (cli) are the guarantees whose throughput is measured.
	// Default exactly_once and at_least_once.
	Guarantees []string
	// PG (sinks) is a PostgreSQL DSN; the run creates a database of its
	// own in that server. Required by sinks.
	PG string
	// BadRequestRate (sinks) is the share of requests the receiver answers
	// 400 (permanent: dead letters, no effect). Default 0.
	BadRequestRate float64
	// KeepDB (sinks) keeps the run's database. Default false: dropped.
	KeepDB bool
	// Quiet (sinks) is how long the run watches, once every delivery is
	// settled, for a further effect (a duplicate). Default 10 s.
	Quiet time.Duration
}

// Run runs the scenario name.
func Run(ctx context.Context, name string, cfg Config) error {
	scenarios := map[string]func(context.Context, *run) error{
		"orders": runOrders, "pageviews": runPageviews, "poison": runPoison, "sinks": runSinks, "cli": runCLI,
	}
	fn, ok := scenarios[name]
	if !ok {
		return fmt.Errorf("scenario: unknown scenario %q (want one of %s)", name, strings.Join(Names, ", "))
	}
	cfg, err := cfg.withDefaults(name)
	if err != nil {
		return err
	}
	r := &run{cfg: cfg, name: name, out: cfg.Out, id: strconv.FormatInt(time.Now().Unix(), 10)}
	defer r.close()
	if err := r.setup(); err != nil {
		return err
	}
	return fn(ctx, r)
}

func (cfg Config) withDefaults(name string) (Config, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = 6
	}
	if len(cfg.Guarantees) == 0 {
		cfg.Guarantees = []string{"exactly_once", "at_least_once"}
	}
	if cfg.Quiet == 0 {
		cfg.Quiet = 10 * time.Second
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return cfg, fmt.Errorf("scenario: own executable: %w", err)
		}
		cfg.Executable = exe
	}
	var errs []error
	if cfg.Records < 2 || cfg.Kills < 0 {
		errs = append(errs, fmt.Errorf("scenario: want at least 2 records and kills >= 0, got %d and %d", cfg.Records, cfg.Kills))
	}
	if name == "sinks" && cfg.PG == "" {
		errs = append(errs, errors.New("scenario: sinks needs a PostgreSQL DSN (--pg or ONCEFLOW_PG_DSN; scripts/install-postgres.sh prints one)"))
	}
	if cfg.BadRequestRate < 0 || cfg.BadRequestRate > 1 {
		errs = append(errs, fmt.Errorf("scenario: bad-request rate %v is not within [0, 1]", cfg.BadRequestRate))
	}
	for _, g := range cfg.Guarantees {
		if g != "exactly_once" && g != "at_least_once" {
			errs = append(errs, fmt.Errorf("scenario: guarantee %q is not exactly_once or at_least_once", g))
		}
	}
	return cfg, errors.Join(errs...)
}

// run is one scenario run: its broker, directory and replicas.
type run struct {
	cfg     Config
	name    string
	out     io.Writer
	id      string // the run's id, part of its topic and group names
	dir     string
	brokers []string
	broker  *embedded.Broker
	reps    []*replicas.Replica // every replica started, stopped at the end
}

// setup creates the run's directory and starts the embedded broker when
// no brokers are given.
func (r *run) setup() error {
	dir, err := os.MkdirTemp(r.cfg.WorkDir, "onceflow-"+r.name+"-")
	if err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	r.dir, r.brokers = dir, r.cfg.Brokers
	if len(r.brokers) == 0 {
		b, err := embedded.Start(embedded.Config{Logger: r.cfg.Logger.Named("broker")})
		if err != nil {
			return fmt.Errorf("scenario: %w", err)
		}
		r.broker, r.brokers = b, b.Addrs()
	}
	return nil
}

// close stops every replica and the embedded broker and removes the
// replicas' state.
func (r *run) close() {
	replicas.StopAll(time.Minute, r.reps...)
	if r.broker != nil {
		r.broker.Close()
	}
	if r.dir != "" {
		states, _ := filepath.Glob(filepath.Join(r.dir, "*-state"))
		for _, s := range states {
			os.RemoveAll(s)
		}
	}
}

// printf writes a line of the scenario's output.
func (r *run) printf(format string, args ...any) {
	fmt.Fprintf(r.out, format+"\n", args...)
}

// start starts a replica called name (instance instance, log <name>.log
// and state <name>-state in the run's directory) of the command line
// line (`run orders ...`) with the run's brokers.
func (r *run) start(name, instance string, line ...string) (*replicas.Replica, error) {
	args := append(slices.Clone(line), "--brokers", strings.Join(r.brokers, ","))
	rep, err := replicas.New(replicas.Spec{Executable: r.cfg.Executable, Args: args, Dir: r.dir, Name: name, Instance: instance,
		StateDir: filepath.Join(r.dir, name+"-state")})
	if err != nil {
		return nil, err
	}
	if err := rep.Start(); err != nil {
		return nil, err
	}
	r.reps = append(r.reps, rep)
	return rep, nil
}

// startThree starts the replicas r1, r2 and r3 of line, their logs named
// prefix+"r1" and so on.
func (r *run) startThree(prefix string, line ...string) ([]*replicas.Replica, error) {
	var reps []*replicas.Replica
	for i := 1; i <= 3; i++ {
		inst := fmt.Sprintf("r%d", i)
		rep, err := r.start(prefix+inst, inst, line...)
		if err != nil {
			return nil, err
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// stopAll stops the replicas gracefully, at once.
func stopAll(reps []*replicas.Replica) {
	replicas.StopAll(time.Minute, reps...)
}

// readyWithin waits at most d until rep is ready.
func readyWithin(ctx context.Context, d time.Duration, reps ...*replicas.Replica) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return replicas.WaitAllReady(ctx, reps...)
}

// committed is the group's committed progress through topic (0 before it
// has committed).
func (r *run) committed(ctx context.Context, group, topic string) int64 {
	p, err := verify.GroupProgress(ctx, r.brokers, group, topic)
	if err != nil {
		return 0
	}
	return p.Committed
}

// waitCommitted polls until the group has committed more than above
// records of topic, and returns that count. It fails when a replica of
// reps has exited.
func (r *run) waitCommitted(ctx context.Context, group, topic string, above int64, reps []*replicas.Replica) (int64, error) {
	for {
		if c := r.committed(ctx, group, topic); c > above {
			return c, nil
		}
		if err := exited(reps); err != nil {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// caughtUp waits at most within until the group has read every record of
// topic below its last stable offsets (`onceflow lag --wait`), prints
// its progress, and fails when it has not.
func (r *run) caughtUp(ctx context.Context, group, topic string, within time.Duration, quiet bool) error {
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	p, err := verify.WaitCaughtUp(wctx, r.brokers, group, topic, 50*time.Millisecond, nil)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("scenario: lag of %s: %w", group, err)
	}
	if !quiet {
		r.printf("group %s on %s: committed %d of %d, lag %d", p.Group, p.Topic, p.Committed, p.Stable, p.Lag)
	}
	if p.NoGroup || p.Lag > 0 {
		return fmt.Errorf("scenario: group %s has not read %s within %v: committed %d of %d, lag %d", group, topic, within, p.Committed, p.Stable, p.Lag)
	}
	return nil
}

// metric reads a replica's metric name summed over its series with the
// labels given (name, value, ...); 0 when unreadable.
func metric(ctx context.Context, rep *replicas.Replica, name string, labels ...string) int64 {
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := rep.Metrics(mctx)
	if err != nil {
		return 0
	}
	return int64(m.Sum(name, labels...))
}

// The replica metrics the scenarios read (see internal/engine's metrics).
const (
	restoredMetric     = "onceflow_restored_records_total"
	rejectedMetric     = "onceflow_rejected_records_total"
	rebalancesMetric   = "onceflow_rebalances_total"
	transactionsMetric = "onceflow_transactions_total"
)

// killLoop kills r3 (reps[2]) with SIGKILL kills times, evenly over the
// records input records as the group commits them, restarts it on its
// state each time and prints how long the kill took to end the process
// and the restarted replica to report ready (its /readyz: in a group
// session with its tasks restored).
func (r *run) killLoop(ctx context.Context, reps []*replicas.Replica, group, input string, records, kills int) error {
	victim := reps[2]
	for k := 1; k <= kills; k++ {
		target := int64(records * k / (kills + 1))
		c, err := r.waitCommitted(ctx, group, input, target-1, reps)
		if err != nil {
			return err
		}
		pid := victim.Pid()
		tKill := time.Now()
		victim.Kill()
		tExit := time.Now()
		r.printf("killed r3 (pid %d) with SIGKILL at %d of %d committed; restarting it on its state", pid, c, records)
		if err := victim.Start(); err != nil {
			return err
		}
		if err := readyWithin(ctx, time.Minute, victim); err != nil {
			return err
		}
		tReady := time.Now()
		r.printf("  r3 back: restored %d changelog records; kill -> exit %.2f s, restart -> ready %.2f s, kill -> ready %.2f s",
			metric(ctx, victim, restoredMetric), tExit.Sub(tKill).Seconds(), tReady.Sub(tExit).Seconds(), tReady.Sub(tKill).Seconds())
	}
	return nil
}

// report writes b to the run's directory as name and prints it.
func (r *run) report(name string, b []byte) {
	os.WriteFile(filepath.Join(r.dir, name), append(b, '\n'), 0o644)
	r.printf("%s", b)
}
