// Package demo is the main job on the embedded broker, in one command: it
// starts the broker and three replicas of the orders topology as separate
// processes, each with its own Pebble state, and writes order events with
// injected duplicates, conflicts and out-of-order versions (and the ground
// truth) at a steady rate. While input is arriving it kills, with SIGKILL,
// the replica that owns the most partitions, waits until the others have
// taken its partitions over (restoring that state from the changelogs),
// starts it again on its own state (it restores what its state lacks),
// reports what each replica process restored (from its own metrics), then
// reads everything back read_committed and checks it against the truth:
// every input accounted for exactly once, rejections by reason equal to
// what was injected, totals equal to the truth.
//
// The topology has its external sinks: each replica runs a sink runner
// that notifies a webhook receiver served in this process (misbehaving a
// little) once per accepted order, and writes one PostgreSQL row per
// accepted order when a server is reachable. Before the replicas stop, the
// demo waits until the receiver has applied one effect per accepted event
// (and PostgreSQL holds one row per accepted event), then reports the
// effects, the duplicate effects (0) and the rows. The run's temporary
// directory is removed at the end, on errors and cancellation too.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/schollz/progressbar/v3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/replicas"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

// Config configures a demo run.
type Config struct {
	// Records to write. Default 100000.
	Records int
	// Replicas to run. Default 3.
	Replicas int
	// Rate paces the input, in records per second, so that records keep
	// arriving while a replica is killed and its partitions move. Default:
	// Records over 20 seconds, at least 1000 per second.
	Rate float64
	// Executable is the onceflow binary the replicas run. Default: this
	// process's own executable.
	Executable string
	// TempDir is where the run's temporary directory (replica logs and
	// Pebble state) is created. Default: os.TempDir().
	TempDir string
	// KeepLogs keeps the replicas' logs and the truth file in
	// Result.LogDir after the run. Default false: the run's directory is
	// removed at the end, on errors and cancellation too. The replicas'
	// Pebble state is removed either way.
	KeepLogs bool
	// Progress receives progress bars and step lines. Default: none.
	Progress io.Writer
	// PlainProgress writes the step lines only, no progress-bar frames
	// (each a carriage-return redraw): for a Progress that is not a
	// terminal (a pipe, a log file). Default false: bars drawn.
	PlainProgress bool
	// Logger: default none.
	Logger hclog.Logger
	// PG is a PostgreSQL DSN for the rows sink. When the server answers,
	// the run writes one row per accepted order in a schema of its own
	// (dropped at the end); "" or unreachable: the demo runs without the
	// rows sink and says so on Progress.
	PG string
	// SinkTimeout bounds the wait, once all input is committed, for the
	// sinks to hold one effect per accepted event. Default 2 minutes.
	SinkTimeout time.Duration
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
	TotalsMatch        bool `json:"totals_match"`

	// RestoredRecords is the sum of RestoredBy.
	RestoredRecords int `json:"restored_records"`
	// RestoredBy is, per replica process, the changelog records it
	// replayed into its state (its onceflow_restored_records_total): the
	// survivors restore the killed replica's tasks when they take them
	// over; the restarted replica ("<name> (restarted)") restores what its
	// own state lacks when tasks come back to it.
	RestoredBy map[string]int `json:"restored_by"`

	RecordsPerSec float64 `json:"records_per_sec"`
	Replicas      int     `json:"replicas"`
	Killed        string  `json:"killed"`
	KilledAt      int     `json:"killed_at_records"`
	// KilledPartitions and KilledRecordsIn are the input partitions the
	// killed replica owned and the records it had processed when it was
	// killed (from its own metrics).
	KilledPartitions int `json:"killed_partitions"`
	KilledRecordsIn  int `json:"killed_records_in"`
	// InputAtKill is how many input records were written when the replica
	// was killed: fewer than RecordsIn means input was still arriving.
	InputAtKill int `json:"input_at_kill"`
	// TakeoverSeconds is the time from the kill until the other replicas
	// owned all input partitions (the group's session timeout, mostly).
	TakeoverSeconds float64 `json:"takeover_seconds"`
	Seconds         float64 `json:"seconds"`
	// SinkEffects is the number of distinct effects (one per idempotency
	// key) the webhook receiver applied; with exactly-once effects it
	// equals EventsAccepted.
	SinkEffects int `json:"sink_effects"`
	// SinkDuplicateEffects counts effects the receiver applied for a
	// payload it had applied already under another key. Must be 0.
	SinkDuplicateEffects int `json:"sink_duplicate_effects"`
	// SinkRequests is how many requests the receiver answered (retries
	// and re-sends included).
	SinkRequests int `json:"sink_requests"`
	// Postgres says whether the PostgreSQL rows sink ran; PostgresRows is
	// then the rows it wrote (one per accepted event).
	Postgres     bool `json:"postgres"`
	PostgresRows int  `json:"postgres_rows,omitempty"`
	// LogDir holds the replicas' logs when Config.KeepLogs is set; "" when
	// the run's directory was removed.
	LogDir string `json:"log_dir,omitempty"`
}

const (
	input    = "demo-orders"
	output   = "demo-customer-totals"
	app      = "demo"
	rejected = app + "-rejected"

	inputPartitions = 6
)

// Run runs the demo.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	dir, err := os.MkdirTemp(cfg.TempDir, "onceflow-demo-")
	if err != nil {
		return Result{}, fmt.Errorf("demo: %w", err)
	}
	res = Result{Replicas: cfg.Replicas, RestoredBy: map[string]int{}}
	defer func() {
		if cerr := cleanup(dir, cfg.KeepLogs); cerr != nil && err == nil {
			err = cerr
		}
		if cfg.KeepLogs {
			res.LogDir = dir
		}
	}()

	b, err := embedded.Start(embedded.Config{Logger: cfg.Logger})
	if err != nil {
		return res, fmt.Errorf("demo: %w", err)
	}
	defer b.Close()
	brokers := b.Addrs()
	kept := "removed at the end"
	if cfg.KeepLogs {
		kept = "kept"
	}
	fmt.Fprintf(progress, "embedded broker on %s; replica logs and state in %s (%s)\n", brokers[0], dir, kept)
	ext, err := startSinks(ctx, cfg, progress)
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := ext.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return res, fmt.Errorf("demo: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, inputPartitions, 1, nil, input); err != nil {
		return res, fmt.Errorf("demo: create %s: %w", input, err)
	}

	reps := make([]*replicas.Replica, cfg.Replicas)
	defer func() { replicas.StopAll(stopGrace, reps...) }()
	start := time.Now()
	for i := range reps {
		name := fmt.Sprintf("replica-%d", i+1)
		if reps[i], err = startReplica(cfg.Executable, brokers[0], name, name, dir, ext.replicaArgs()); err != nil {
			return res, err
		}
	}
	fmt.Fprintf(progress, "started %d replicas of the orders topology with its external sinks (exactly-once, Pebble state and a sink runner each)\n", cfg.Replicas)

	fmt.Fprintf(progress, "writing %d order events to %s at %.0f/s (6 partitions; 10%% duplicates, 1%% conflicts, 5%% out of order)\n",
		cfg.Records, input, cfg.Rate)
	pctx, cancel := context.WithCancel(ctx)
	produced := make(chan produceResult, 1)
	go func() {
		truth, err := gen.ProduceOrders(pctx, gen.OrdersConfig{Brokers: brokers, Topic: input, Events: cfg.Records, Partitions: inputPartitions,
			DuplicateRate: gen.DefaultDuplicateRate, ConflictRate: gen.DefaultConflictRate, OutOfOrderRate: gen.DefaultOutOfOrderRate,
			Seed: 1, Rate: cfg.Rate, Logger: cfg.Logger})
		produced <- produceResult{truth, err}
	}()
	var (
		truth    gen.Truth
		produceD bool
	)
	defer func() {
		cancel()
		if !produceD {
			<-produced
		}
	}()

	barW := progress
	if cfg.PlainProgress {
		barW = io.Discard
	}
	bar := progressbar.NewOptions(cfg.Records, progressbar.OptionSetWriter(barW), progressbar.OptionSetDescription("committed"),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	k := killer{cfg: cfg, res: &res, reps: reps, adm: adm, dir: dir, broker: brokers[0], args: ext.replicaArgs(), progress: progress, killAt: cfg.Records * 2 / 5}
	for {
		select {
		case p := <-produced:
			produceD = true
			if p.err != nil {
				return res, fmt.Errorf("demo: produce: %w", p.err)
			}
			truth = p.truth
		default:
		}
		done, err := committed(ctx, adm)
		if err != nil {
			return res, err
		}
		bar.Set(done)
		if err := k.step(ctx, done); err != nil {
			return res, err
		}
		if produceD && done >= cfg.Records && k.phase == restoredVictim {
			break
		}
		for i, r := range reps {
			if r.Exited() && (k.phase != killed || i != k.victim) {
				return res, fmt.Errorf("demo: %s exited early: see its log %s (removed at the end unless --keep-logs)", r.Name, r.LogPath)
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
	fmt.Fprintf(progress, "all input committed in %.1fs; waiting for the sinks to hold one effect per accepted event (%d)\n", elapsed.Seconds(), truth.Accepted)
	if err := ext.wait(ctx, truth.Accepted, cfg.SinkTimeout, progress); err != nil {
		return res, err
	}
	sinksDone := time.Since(start)
	if err := truth.WriteFile(filepath.Join(dir, "truth.json")); err != nil {
		return res, fmt.Errorf("demo: %w", err)
	}
	for _, r := range reps {
		m, err := metricsOf(ctx, r)
		if err != nil {
			return res, err
		}
		res.RestoredBy[r.Name] = int(m[restoredMetric])
	}
	for _, r := range reps {
		r.Stop(stopGrace)
		// A replica that stops hands its tasks to the ones still running,
		// which may restore them: the count each printed as it stopped is
		// the final one.
		if n, ok := stoppedRestores(r); ok {
			res.RestoredBy[r.Name] = n
		}
	}
	for _, n := range res.RestoredBy {
		res.RestoredRecords += n
	}
	fmt.Fprintf(progress, "sinks done %.1fs after the start; changelog records restored: %s; verifying with a read_committed reader\n",
		sinksDone.Seconds(), res.RestoredSummary())

	rep, err := verify.CheckTruth(ctx, brokers, truth, input, output, rejected)
	if err != nil {
		return res, fmt.Errorf("demo: verify: %w", err)
	}
	res.RecordsIn, res.RecordsOut = rep.Input, rep.Output
	res.Missing, res.Duplicates, res.Unexpected = rep.Missing, rep.Duplicates, rep.Unexpected
	res.EventsUnique, res.EventsAccepted = truth.EventsUnique, rep.Output
	res.DuplicatesInjected, res.DuplicatesRejected = truth.DuplicatesInjected, rep.Rejected[wire.ReasonDuplicate]
	res.ConflictsInjected, res.ConflictsRejected = truth.ConflictsInjected, rep.Rejected[wire.ReasonConflict]
	res.StaleInjected, res.StaleRejected = truth.StaleInjected, rep.Rejected[wire.ReasonStale]
	res.TotalsMatch = rep.TotalsMatch
	if err := ext.report(ctx, &res); err != nil {
		return res, err
	}
	res.ExactlyOnce = rep.OK && rep.Input == cfg.Records &&
		res.EventsAccepted == truth.Accepted &&
		res.DuplicatesRejected == res.DuplicatesInjected &&
		res.ConflictsRejected == res.ConflictsInjected &&
		res.StaleRejected == res.StaleInjected && res.TotalsMatch &&
		res.SinkEffects == res.EventsAccepted && res.SinkDuplicateEffects == 0 &&
		(!res.Postgres || res.PostgresRows == res.EventsAccepted)
	res.Seconds = elapsed.Seconds()
	res.RecordsPerSec = float64(cfg.Records) / elapsed.Seconds()
	return res, nil
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Records == 0 {
		cfg.Records = 100000
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 3
	}
	if cfg.Records < 0 || cfg.Replicas < 2 || cfg.Rate < 0 {
		return cfg, fmt.Errorf("demo: want records > 0, at least 2 replicas and a rate >= 0, got %d, %d and %v", cfg.Records, cfg.Replicas, cfg.Rate)
	}
	if cfg.SinkTimeout == 0 {
		cfg.SinkTimeout = 2 * time.Minute
	}
	if cfg.Rate == 0 {
		cfg.Rate = max(float64(cfg.Records)/20, 1000)
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return cfg, fmt.Errorf("demo: own executable: %w", err)
		}
		cfg.Executable = exe
	}
	return cfg, nil
}

type produceResult struct {
	truth gen.Truth
	err   error
}

// phase is where the demo's fault is.
type phase int

const (
	running        phase = iota // all replicas run
	killed                      // a replica was killed; its partitions have not moved yet
	restarted                   // the survivors took them over; the victim runs again
	restoredVictim              // the restarted victim is in a session, its restore done
)

// killer drives the fault: it kills the replica that owns the most
// partitions once killAt records are committed, waits until the survivors
// have taken its partitions over (restoring their state from the
// changelogs), then starts it again on its own state, and waits until it
// is back in a session (having restored what its state lacked).
type killer struct {
	cfg      Config
	res      *Result
	reps     []*replicas.Replica
	adm      *kadm.Client
	dir      string
	broker   string
	args     []string // the replicas' sink flags
	progress io.Writer
	killAt   int

	phase    phase
	victim   int
	killedAt time.Time
}

func (k *killer) step(ctx context.Context, done int) error {
	switch k.phase {
	case running:
		if done < k.killAt {
			return nil
		}
		victim, err := killOwner(ctx, k.res, k.reps, k.adm, done)
		if err != nil || victim < 0 {
			return err
		}
		k.victim, k.killedAt, k.phase = victim, time.Now(), killed
		fmt.Fprintf(k.progress, "\nkilled %s with SIGKILL at %d committed records (it owned %d partitions and had processed %d records; %d of %d input records written)\n",
			k.res.Killed, done, k.res.KilledPartitions, k.res.KilledRecordsIn, k.res.InputAtKill, k.cfg.Records)
	case killed:
		owned := 0
		for i, r := range k.reps {
			if i == k.victim {
				continue
			}
			m, err := metricsOf(ctx, r)
			if err != nil || !r.Ready(ctx) {
				return nil
			}
			owned += int(m[assignedMetric])
		}
		if owned < inputPartitions {
			return nil
		}
		k.res.TakeoverSeconds = time.Since(k.killedAt).Seconds()
		name := k.reps[k.victim].Name
		fmt.Fprintf(k.progress, "\nthe other replicas took over %s's partitions %.1fs after the kill (session timeout); starting %s again on its own state\n",
			name, k.res.TakeoverSeconds, name)
		r, err := startReplica(k.cfg.Executable, k.broker, name+" (restarted)", name, k.dir, k.args)
		if err != nil {
			return err
		}
		k.reps[k.victim], k.phase = r, restarted
	case restarted:
		if r := k.reps[k.victim]; r.Ready(ctx) {
			if m, err := metricsOf(ctx, r); err == nil && m[assignedMetric] > 0 {
				k.phase = restoredVictim
			}
		}
	}
	return nil
}

// killOwner kills, with SIGKILL, the replica that owns the most input
// partitions among those that have processed records, and records what it
// owned in res. It returns the replica's index, or -1 when none qualifies
// yet (the group is rebalancing).
func killOwner(ctx context.Context, res *Result, reps []*replicas.Replica, adm *kadm.Client, done int) (int, error) {
	victim, best := -1, metricSet{}
	for i, r := range reps {
		m, err := metricsOf(ctx, r)
		if err != nil {
			continue // not serving yet
		}
		if m[assignedMetric] > 0 && m[recordsInMetric] > 0 && m[assignedMetric] > best[assignedMetric] {
			victim, best = i, m
		}
	}
	if victim < 0 {
		return -1, nil
	}
	ends, err := adm.ListEndOffsets(ctx, input)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return -1, fmt.Errorf("demo: input end offsets: %w", err)
	}
	r := reps[victim]
	r.Kill()
	res.Killed, res.KilledAt = r.Name, done
	res.KilledPartitions, res.KilledRecordsIn = int(best[assignedMetric]), int(best[recordsInMetric])
	res.RestoredBy[r.Name] = int(best[restoredMetric])
	ends.Each(func(o kadm.ListedOffset) { res.InputAtKill += int(o.Offset) })
	return victim, nil
}

// RestoredSummary lists the changelog records each replica process
// restored, as "replica-1 120, replica-2 0, ...".
func (r Result) RestoredSummary() string {
	by := r.RestoredBy
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(by)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", name, by[name])
	}
	return b.String()
}

// cleanup removes the run's directory, or with keepLogs only the
// replicas' Pebble state in it.
func cleanup(dir string, keepLogs bool) error {
	if !keepLogs {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("demo: remove %s: %w", dir, err)
		}
		return nil
	}
	states, err := filepath.Glob(filepath.Join(dir, "*-state"))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	for _, s := range states {
		if err := os.RemoveAll(s); err != nil {
			return fmt.Errorf("demo: remove %s: %w", s, err)
		}
	}
	return nil
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

// stopGrace bounds a replica's graceful stop before it is killed.
const stopGrace = 20 * time.Second

// startReplica starts a replica process called name, with the Pebble state
// of base (so a restarted replica has its own state back), its own log,
// and the sink flags args.
func startReplica(exe, broker, name, base, dir string, args []string) (*replicas.Replica, error) {
	line := append([]string{"run", "orders", "--brokers", broker, "--app-id", app, "--input", input, "--output", output}, args...)
	r, err := replicas.New(replicas.Spec{Executable: exe, Args: line, Dir: dir, Name: name, Instance: base})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := r.Start(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return r, nil
}

// The replica metrics the demo reads (see internal/engine's metrics).
const (
	assignedMetric  = "onceflow_assigned_partitions"
	recordsInMetric = "onceflow_records_in_total"
	restoredMetric  = "onceflow_restored_records_total"
)

// metricSet maps a metric name to its value summed over its label sets.
type metricSet map[string]float64

// metricsOf reads the metrics the demo follows from the replica.
func metricsOf(ctx context.Context, r *replicas.Replica) (metricSet, error) {
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ms, err := r.Metrics(mctx)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	m := metricSet{}
	for _, name := range []string{assignedMetric, recordsInMetric, restoredMetric} {
		m[name] = ms.Sum(name)
	}
	return m, nil
}

// stoppedLine is the line a replica prints to its log as it stops.
var stoppedLine = regexp.MustCompile(`stopped: .*, ([0-9]+) restored`)

// stoppedRestores reads the restore count from the line the replica
// printed as it stopped; false when it printed none (it was killed).
func stoppedRestores(r *replicas.Replica) (int, bool) {
	b, err := os.ReadFile(r.LogPath)
	if err != nil {
		return 0, false
	}
	m := stoppedLine.FindAllSubmatch(b, -1)
	if len(m) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(m[len(m)-1][1]))
	return n, err == nil
}
