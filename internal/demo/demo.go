// Package demo is the main job on the embedded broker, in one command: it
// starts the broker, writes order events with injected duplicates,
// conflicts and out-of-order versions (and the ground truth), runs three
// replicas of the orders topology as separate processes, each with its own
// Pebble state, kills one with SIGKILL mid-run and starts it again on the
// same state, then reads everything back read_committed and checks it
// against the truth: every input accounted for exactly once, rejections by
// reason equal to what was injected, totals equal to the truth.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/schollz/progressbar/v3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/embedded"
	"github.com/onceflow/onceflow/internal/gen"
	"github.com/onceflow/onceflow/internal/verify"
)

// Config configures a demo run.
type Config struct {
	// Records to write. Default 100000.
	Records int
	// Replicas to run. Default 3.
	Replicas int
	// Executable is the onceflow binary the replicas run. Default: this
	// process's own executable.
	Executable string
	// Progress receives progress bars and step lines. Default: none.
	Progress io.Writer
	// Logger: default none.
	Logger hclog.Logger
}

// Result is what the demo reports. JSON names are a contract.
type Result struct {
	RecordsIn          int  `json:"records_in"`
	RecordsOut         int  `json:"records_out"`
	Missing            int  `json:"missing"`
	Duplicates         int  `json:"duplicates"`
	Unexpected         int  `json:"unexpected"`
	ExactlyOnce        bool `json:"exactly_once"`
	EventsUnique       int  `json:"events_unique"`
	EventsAccepted     int  `json:"events_accepted"`
	DuplicatesInjected int  `json:"duplicates_injected"`
	DuplicatesRejected int  `json:"duplicates_rejected"`
	ConflictsInjected  int  `json:"conflicts_injected"`
	ConflictsRejected  int  `json:"conflicts_rejected"`
	StaleInjected      int  `json:"stale_injected"`
	StaleRejected      int  `json:"stale_rejected"`
	RestoredRecords    int  `json:"restored_records"`
	TotalsMatch        bool `json:"totals_match"`

	RecordsPerSec float64 `json:"records_per_sec"`
	Replicas      int     `json:"replicas"`
	Killed        string  `json:"killed"`
	KilledAt      int     `json:"killed_at_records"`
	Seconds       float64 `json:"seconds"`
	LogDir        string  `json:"log_dir"`
}

const (
	input    = "demo-orders"
	output   = "demo-customer-totals"
	app      = "demo"
	rejected = app + "-rejected"
)

// Run runs the demo.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Records == 0 {
		cfg.Records = 100000
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 3
	}
	if cfg.Records < 0 || cfg.Replicas < 2 {
		return Result{}, fmt.Errorf("demo: want records > 0 and at least 2 replicas, got %d and %d", cfg.Records, cfg.Replicas)
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return Result{}, fmt.Errorf("demo: own executable: %w", err)
		}
		cfg.Executable = exe
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	logDir, err := os.MkdirTemp("", "onceflow-demo-")
	if err != nil {
		return Result{}, fmt.Errorf("demo: %w", err)
	}
	res := Result{Replicas: cfg.Replicas, LogDir: logDir}

	b, err := embedded.Start(embedded.Config{Logger: cfg.Logger})
	if err != nil {
		return res, fmt.Errorf("demo: %w", err)
	}
	defer b.Close()
	brokers := b.Addrs()
	fmt.Fprintf(progress, "embedded broker on %s; replica logs in %s\n", brokers[0], logDir)

	fmt.Fprintf(progress, "writing %d order events to %s (6 partitions; 10%% duplicates, 1%% conflicts, 5%% out of order)\n", cfg.Records, input)
	truth, err := gen.ProduceOrders(ctx, gen.OrdersConfig{Brokers: brokers, Topic: input, Events: cfg.Records, Partitions: 6,
		DuplicateRate: gen.DefaultDuplicateRate, ConflictRate: gen.DefaultConflictRate, OutOfOrderRate: gen.DefaultOutOfOrderRate,
		Seed: 1, Progress: cfg.Progress})
	if err != nil {
		return res, fmt.Errorf("demo: produce: %w", err)
	}
	if err := truth.WriteFile(filepath.Join(logDir, "truth.json")); err != nil {
		return res, fmt.Errorf("demo: %w", err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return res, fmt.Errorf("demo: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	reps := make([]*replica, cfg.Replicas)
	defer func() {
		for _, r := range reps {
			r.stop()
		}
	}()
	start := time.Now()
	for i := range reps {
		if reps[i], err = startReplica(cfg.Executable, brokers[0], fmt.Sprintf("replica-%d", i+1), logDir, freePort()); err != nil {
			return res, err
		}
	}
	fmt.Fprintf(progress, "started %d replicas of the orders topology (exactly-once, Pebble state in %s)\n", cfg.Replicas, logDir)

	bar := progressbar.NewOptions(cfg.Records, progressbar.OptionSetWriter(progress), progressbar.OptionSetDescription("committed"),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	killAt := cfg.Records * 2 / 5
	victim := len(reps) - 1
	killed := false
	for {
		done, err := committed(ctx, adm)
		if err != nil {
			return res, err
		}
		bar.Set(done)
		if !killed && done >= killAt {
			name := reps[victim].name
			reps[victim].kill()
			res.Killed, res.KilledAt = name, done
			fmt.Fprintf(progress, "\nkilled %s with SIGKILL at %d committed records; starting it again\n", name, done)
			if reps[victim], err = startReplica(cfg.Executable, brokers[0], name, logDir, freePort()); err != nil {
				return res, err
			}
			killed = true
		}
		if done >= cfg.Records {
			break
		}
		for _, r := range reps {
			if r.exited() {
				return res, fmt.Errorf("demo: %s exited early: see %s", r.name, r.logPath)
			}
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	elapsed := time.Since(start)
	bar.Finish()
	// The restarted replica's restore count: what it replayed from the
	// changelogs to catch up with the state it had not applied.
	res.RestoredRecords = reps[victim].restored()
	for _, r := range reps {
		r.stop()
	}
	fmt.Fprintf(progress, "all input committed in %.1fs; the restarted replica restored %d changelog records; verifying with a read_committed reader\n",
		elapsed.Seconds(), res.RestoredRecords)

	rep, err := verify.CheckTruth(ctx, brokers, truth, input, output, rejected)
	if err != nil {
		return res, fmt.Errorf("demo: verify: %w", err)
	}
	res.RecordsIn, res.RecordsOut = rep.Input, rep.Output
	res.Missing, res.Duplicates, res.Unexpected = rep.Missing, rep.Duplicates, rep.Unexpected
	res.EventsUnique, res.EventsAccepted = truth.EventsUnique, rep.Output
	res.DuplicatesInjected, res.DuplicatesRejected = truth.DuplicatesInjected, rep.Rejected[gen.ReasonDuplicate]
	res.ConflictsInjected, res.ConflictsRejected = truth.ConflictsInjected, rep.Rejected[gen.ReasonConflict]
	res.StaleInjected, res.StaleRejected = truth.StaleInjected, rep.Rejected[gen.ReasonStale]
	res.TotalsMatch = rep.TotalsMatch
	res.ExactlyOnce = rep.OK && rep.Input == cfg.Records &&
		res.EventsAccepted == truth.Accepted &&
		res.DuplicatesRejected == res.DuplicatesInjected &&
		res.ConflictsRejected == res.ConflictsInjected &&
		res.StaleRejected == res.StaleInjected && res.TotalsMatch
	res.Seconds = elapsed.Seconds()
	res.RecordsPerSec = float64(cfg.Records) / elapsed.Seconds()
	return res, nil
}

// freePort finds a free loopback port for a replica's metrics.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// committed sums the group's committed offsets on the input: the records
// whose outputs are committed.
func committed(ctx context.Context, adm *kadm.Client) (int, error) {
	resp, err := adm.FetchOffsets(ctx, app)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("demo: committed offsets: %w", err)
	}
	n := 0
	for _, o := range resp[input] {
		if o.At > 0 {
			n += int(o.At)
		}
	}
	return n, nil
}

type replica struct {
	port    int
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	waited  chan struct{}
}

func startReplica(exe, broker, name, logDir string, port int) (*replica, error) {
	path := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	cmd := exec.Command(exe, "run", "orders", "--brokers", broker, "--app-id", app, "--instance-id", name,
		"--input", input, "--output", output, "--log-level", "info",
		"--state-dir", filepath.Join(logDir, name+"-state"), "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("demo: start %s: %w", name, err)
	}
	r := &replica{name: name, port: port, cmd: cmd, logPath: path, log: f, waited: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(r.waited)
	}()
	return r, nil
}

// restored reads the replica's onceflow_restored_records_total.
func (r *replica) restored() int {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", r.port))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return -1
	}
	total := 0.0
	if f, ok := families["onceflow_restored_records_total"]; ok {
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return int(total)
}

func (r *replica) exited() bool {
	select {
	case <-r.waited:
		return true
	default:
		return false
	}
}

func (r *replica) kill() {
	r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.waited
}

// stop asks for a graceful shutdown (SIGTERM) and kills after a grace.
func (r *replica) stop() {
	if r == nil || r.exited() {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.waited:
	case <-time.After(20 * time.Second):
		r.kill()
	}
}
