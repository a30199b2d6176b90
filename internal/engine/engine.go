// Package engine runs a compiled topology as one replica of a consumer
// group: the transaction loop, rebalances, rewinds and shutdown. The public
// processor package configures it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is the engine's complete, validated configuration.
type Config struct {
	Client         kafka.Client
	Timeouts       kafka.Timeouts
	AppID          string
	InstanceID     string
	ExactlyOnce    bool
	CommitInterval time.Duration
	CommitRecords  int
	// MaxClockSkew is how far ahead of the wall clock a record's timestamp
	// may move a task's stream time. Zero: 1 hour.
	MaxClockSkew time.Duration
	StateDir     string // "" keeps state in memory (restored from changelogs at every start)
	Logger       hclog.Logger
	Registerer   prometheus.Registerer
	Hooks        Hooks
	// StallTimeout: how long an assigned partition may have input pending
	// without a commit (or a restore go without progress) before the
	// replica reports a stall. Default DefaultStallTimeout.
	StallTimeout time.Duration

	// PurgeInterval is how often the records of repartition topics below
	// the group's committed offsets are deleted. Zero: DefaultPurgeInterval.
	PurgeInterval time.Duration
	// CleanupDelay is how long the local state of a task this replica no
	// longer owns is kept (it comes back cheaply if the task does). Zero:
	// DefaultCleanupDelay.
	CleanupDelay time.Duration
	// Now is the clock of state ageing, purges, the stream time bound and
	// stall detection.
	// Nil: time.Now.
	Now func() time.Time
}

// Defaults of zero Config fields.
const (
	// DefaultPurgeInterval is Kafka Streams' repartition.purge.interval.ms.
	DefaultPurgeInterval = 30 * time.Second
	// DefaultCleanupDelay is Kafka Streams' state.cleanup.delay.ms.
	DefaultCleanupDelay = 10 * time.Minute
)

// Hooks let tests stop the loop between two steps. Nil hooks are skipped.
type Hooks struct {
	// BeforeBegin runs before a transaction begins.
	BeforeBegin func()
	// BeforeAddOffsets runs before the offsets join the transaction.
	BeforeAddOffsets func()
	// BeforeCommit runs after the offsets joined, before CommitTxn.
	BeforeCommit func()
	// BeforeApply runs after a commit, before its state reaches Pebble;
	// returning false skips the apply, as a crash at that instant would.
	BeforeApply func() bool
	// ApplyError, when it returns an error, fails the apply of a committed
	// transaction's state with it, before anything reaches Pebble.
	ApplyError func() error
	// RestoreWaiting runs when a restore finds a changelog partition with
	// a transaction open and starts waiting for it to end.
	RestoreWaiting func(topic string, partition int32)
	// BeforeRestoreBatch runs before each batch of a restore reaches
	// Pebble (records of the changelog partition, up to offset next); an
	// error it returns fails the restore there, the batch not applied, as
	// a crash at that instant would.
	BeforeRestoreBatch func(topic string, partition int32, records int, next int64) error
}

// Engine is one replica: it runs one group session after another and
// shuts down. Its parts are machines with narrow jobs: the output policy,
// what observes commits, the restorer (local state), and the Kafka
// clients; each session's driver (session.go) processes and commits.
type Engine struct {
	cfg Config
	g   *graph.Graph
	log hclog.Logger
	m   *metrics

	// Set once in Run before any session starts.
	topics []string
	output outputPolicy // what the topics written accept (output.go)

	commits  commitWatch // what observes commits (observers.go)
	restorer *restorer   // local state: restore, staleness, state sizes (restorer.go)
	conn     clients
	life     lifecycle
}

// commitWatch is the state of what observes commits and aborts
// (observers.go), read by the watchdog, Health and Status.
type commitWatch struct {
	repeats  repeats
	purge    purger
	progress *progress
	live     live    // session and last commit, for Status
	size     txnSize // the transaction size in force (driver goroutine only)
}

// clients are the replica's Kafka clients.
type clients struct {
	producer *kafka.Producer // owned by Run between sessions, by the driver during one
	group    *kafka.Group
	admin    *kafka.Admin // open for the whole Run
}

// lifecycle is the replica's run state.
type lifecycle struct {
	closing sync.WaitGroup // producers being closed in the background
	ready   atomic.Bool
	crashed atomic.Bool
	reinit  atomic.Bool // create the producer again before the next session (a hanging transaction)
	mu      struct {
		sync.Mutex
		cancelSession context.CancelFunc
		stopped       error // set once: Run returns it
	}
}

// New prepares a replica; it does no I/O.
func New(cfg Config, g *graph.Graph) (*Engine, error) {
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	m, err := newMetrics(cfg.Registerer, cfg.AppID, cfg.InstanceID)
	if err != nil {
		return nil, fmt.Errorf("engine: register metrics: %w", err)
	}
	if cfg.MaxClockSkew <= 0 {
		cfg.MaxClockSkew = time.Hour
	}
	// Repartition topics are named after the application.
	g = g.WithPrefix(cfg.AppID)
	if cfg.PurgeInterval == 0 {
		cfg.PurgeInterval = DefaultPurgeInterval
	}
	if cfg.CleanupDelay == 0 {
		cfg.CleanupDelay = DefaultCleanupDelay
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m.txnTimeout.Set(cfg.Timeouts.Transaction.Seconds())
	for _, t := range append(g.SinkTopics(), g.OutboxTopics()...) {
		m.recordsOut.add(t, 0) // at zero before the first record
	}
	e := &Engine{cfg: cfg, g: g, log: log, m: m, output: outputPolicy{now: cfg.Now, rejected: cfg.AppID + "-rejected"}, commits: commitWatch{progress: newProgress(cfg.Now)}}
	e.commits.size = newTxnSize(cfg.CommitRecords, cfg.CommitInterval)
	m.txnRecordsLimit.Set(float64(cfg.CommitRecords))
	m.txnInterval.Set(cfg.CommitInterval.Seconds())
	e.commits.purge.e = e
	e.commits.purge.topics = g.InternalTopics()
	e.restorer = newRestorer(e, e.storeInfos())
	return e, nil
}

// Stats returns a snapshot of the counters.
func (e *Engine) Stats() Stats { return e.m.snapshot() }

// Ready reports whether the replica is in a group session.
func (e *Engine) Ready() bool { return e.life.ready.Load() }

// RejectedTopic is where rejected records go.
func (e *Engine) RejectedTopic() string { return e.output.rejected }

// Crash makes the next stop an unclean one, as if the process were killed:
// no commit, no abort, no leave. For tests.
func (e *Engine) Crash() { e.life.crashed.Store(true) }

// StopBound is how long Run may take to return once its context ends,
// even with a coordinator that does not answer: the open transaction's
// commit (or its abort) within the commit timeout each, then leaving the
// group and closing the clients within closeGrace each.
func StopBound(t kafka.Timeouts) time.Duration {
	return 2*t.WithDefaults().Commit + 2*closeGrace + time.Second
}

// closeGrace bounds each step of shutdown that talks to the cluster.
const closeGrace = 5 * time.Second

// ErrStopTimeout is returned by Run when the replica did not stop within
// StopBound: it returns anyway, leaving clients to close in the background.
var ErrStopTimeout = errors.New("engine: stop did not finish within its bound")

// Run prepares topics, joins the group and processes until ctx ends, then
// commits or aborts the open transaction and leaves the group, within
// StopBound of ctx ending.
func (e *Engine) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- e.run(ctx) }()
	select {
	case err := <-done:
		return cleanStop(ctx, err)
	case <-ctx.Done():
	}
	bound := StopBound(e.cfg.Timeouts)
	select {
	case err := <-done:
		return cleanStop(ctx, err)
	case <-time.After(bound):
		e.log.Error("stop did not finish in time; returning without it", "bound", bound)
		return fmt.Errorf("%w (%v)", ErrStopTimeout, bound)
	}
}

// cleanStop is Run's error: nil for a step cut short by ctx ending (a stop
// while connecting or preparing topics is as clean as one while
// processing), err otherwise.
func cleanStop(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

func (e *Engine) run(ctx context.Context) error {
	admin, err := kafka.Connect(ctx, e.cfg.Client)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.conn.admin = admin
	defer admin.Close()
	if err := admin.CheckGroup(e.cfg.AppID); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	marker := graph.ResetMarkerTopic(e.cfg.AppID)
	if ps, err := admin.Partitions(marker); err != nil {
		return fmt.Errorf("engine: %w", err)
	} else if _, ok := ps[marker]; ok {
		return fmt.Errorf("%w: topic %s exists; run `onceflow reset --app-id %s` again to finish it", ErrResetUnfinished, marker, e.cfg.AppID)
	}
	defer e.commits.purge.wait()
	if err := e.prepare(ctx); err != nil {
		return err
	}
	if len(e.restorer.stores) > 0 {
		if err := e.openState(); err != nil {
			return err
		}
		defer e.restorer.db.Close()
		reader := kafka.NewChangelogReader(e.cfg.Client, e.cfg.Timeouts.Transaction)
		reader.Waiting = e.restorer.restoreWaiting
		e.restorer.reader = reader
	}
	group, err := kafka.NewTaskGroup(e.cfg.Client, e.cfg.Timeouts, e.cfg.AppID, e.cfg.InstanceID, e.subTopologies())
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.conn.group = group
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for err := range group.Errors() {
			if errors.Is(err, errSessionEnded) || errors.Is(err, kafka.ErrClaimRevoked) {
				// Routine: a claim's setup cut short by a rebalance or a stop.
				e.log.Debug("claim ended during its setup", "error", err)
				continue
			}
			e.log.Warn("group error", "error", err)
		}
	}()
	wctx, stopWatch := context.WithCancel(ctx)
	ticker := time.NewTicker(min(restoreLogInterval, e.stallTimeout()/4))
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		e.watch(wctx, ticker.C)
	}()
	hung := make(chan struct{})
	if e.cfg.ExactlyOnce {
		hangTicker := time.NewTicker(e.hangCheckInterval())
		defer hangTicker.Stop()
		go func() {
			defer close(hung)
			e.hangWatch(wctx, hangTicker.C)
		}()
	} else {
		close(hung)
	}
	err = e.loop(ctx)
	stopWatch()
	ticker.Stop()
	<-watched
	e.shutdown()
	// A check still waiting for a coordinator that does not answer ends
	// when the admin client closes; the stop does not wait for it longer.
	select {
	case <-hung:
	case <-time.After(100 * time.Millisecond):
	}
	select {
	case <-drained:
	case <-time.After(closeGrace):
	}
	return err
}

// loop runs one group session after another.
func (e *Engine) loop(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if e.life.reinit.Swap(false) && e.conn.producer != nil {
			e.closeProducer(e.conn.producer)
			e.conn.producer = nil
			e.m.recreations.Inc()
		}
		if e.conn.producer == nil {
			p, err := e.newProducer(ctx)
			if err != nil {
				return err
			}
			if p == nil {
				return nil // ctx ended first: a clean stop
			}
			e.conn.producer = p
		}
		sctx, cancel := context.WithCancel(ctx)
		e.life.mu.Lock()
		e.life.mu.cancelSession = cancel
		e.life.mu.Unlock()
		ended := time.Now()
		err := e.conn.group.Consume(sctx, e.topics, &handler{e: e, joined: ended})
		if err != nil && sctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = nil // the session was ended here (a rewind), while it joined a generation
		}
		cancel()
		if serr := e.stopped(); serr != nil {
			return serr
		}
		switch {
		case errors.Is(err, ErrTaskSplit), errors.Is(err, ErrNotCopartitioned):
			return err
		case errors.Is(err, kafka.ErrFencedInstance), errors.Is(err, kafka.ErrInternalOffsetOutOfRange):
			return fmt.Errorf("engine: %w", err)
		case kafka.IsRefused(err) && ctx.Err() == nil:
			// A missing group or topic ACL (the group, a changelog to
			// restore from): joining again cannot help.
			return fmt.Errorf("engine: %w", kafka.Refused(fmt.Sprintf("group session of %q", e.cfg.AppID), err))
		case errors.Is(err, errSessionEnded):
			// A rebalance during the session's setup: join at once.
			e.log.Debug("session ended during its setup; joining again", "error", err)
			backoff = 100 * time.Millisecond
		case err != nil && ctx.Err() == nil:
			e.log.Warn("group session failed; joining again", "error", err, "backoff", backoff)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		default:
			backoff = 100 * time.Millisecond
		}
	}
	return nil
}

// subTopologies maps each source topic (repartition and through topics
// included) to its sub-topology, for the group's task assignor.
func (e *Engine) subTopologies() map[string]int32 {
	subOf := map[string]int32{}
	for _, st := range e.g.SubTopologies {
		for _, t := range st.SourceTopics {
			subOf[t] = int32(st.ID)
		}
	}
	return subOf
}

// rewind ends the current session so the next one starts from the
// committed offsets. sarama cannot seek a claim, so ending the session is
// the only way to replay what an abort discarded.
func (e *Engine) rewind() {
	e.life.mu.Lock()
	cancel := e.life.mu.cancelSession
	e.life.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// stop ends the replica with err: the current session ends and Run
// returns err.
func (e *Engine) stop(err error) {
	e.life.mu.Lock()
	if e.life.mu.stopped == nil {
		e.life.mu.stopped = err
	}
	e.life.mu.Unlock()
	e.log.Error("stopping the replica", "error", err)
	e.rewind()
}

// stopped is the error the replica stops with, if any.
func (e *Engine) stopped() error {
	e.life.mu.Lock()
	defer e.life.mu.Unlock()
	return e.life.mu.stopped
}

// shutdown leaves the group and closes the clients; each step that talks to
// the cluster is given closeGrace, so a broker that does not answer cannot
// hold the stop.
func (e *Engine) shutdown() {
	if e.life.crashed.Load() {
		if e.conn.producer != nil {
			e.conn.producer.Close()
		}
		e.conn.group.Close()
		return
	}
	if !within(closeGrace, func() {
		if err := e.conn.group.Leave(); err != nil {
			e.log.Warn("leave group", "error", err)
		}
		if err := e.conn.group.Close(); err != nil {
			e.log.Warn("close group", "error", err)
		}
		if e.conn.producer != nil {
			if err := e.conn.producer.Close(); err != nil {
				e.log.Warn("close producer", "error", err)
			}
		}
	}) {
		e.log.Warn("leaving the group and closing the clients is taking long; going on", "grace", closeGrace)
	}
	if !within(closeGrace, e.life.closing.Wait) {
		e.log.Warn("dropped producers still closing; going on", "grace", closeGrace)
	}
}

// taskName names a task for metrics and logs.
func taskName(sub int, partition int32) string { return fmt.Sprintf("%d_%d", sub, partition) }

// claimsString lists a session's claims, sorted, for logs.
func claimsString(c map[string][]int32) string {
	var b strings.Builder
	for _, t := range slices.Sorted(maps.Keys(c)) {
		ps := slices.Clone(c[t])
		slices.Sort(ps)
		fmt.Fprintf(&b, "%s%v ", t, ps)
	}
	return strings.TrimSpace(b.String())
}
