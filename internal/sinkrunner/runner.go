// Package sinkrunner delivers the requests of a topology's outbox topics
// to their sinks: a consumer group of its own ("<app id>-sinks") reads
// the outboxes read_committed, a ledger per outbox partition records each
// delivery's state (see Entry), failed attempts are retried with backoff,
// permanent failures and spent budgets go to the dead-letter topic, and
// unknown outcomes to sinks that are not idempotent are parked. Outbox
// offsets are committed only below the lowest delivery not settled. A
// dead letter and the ledger entry that marks it are written in one
// transaction; succeeded entries expire after the ledger retention.
package sinkrunner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/statestore"
)

// flushTimeout bounds one ledger write (changelog and dead-letter records
// acknowledged).
const flushTimeout = 30 * time.Second

// Config configures a runner.
type Config struct {
	Client     kafka.Client
	Timeouts   kafka.Timeouts
	AppID      string
	InstanceID string
	// StateDir holds the ledgers' Pebble database ("": in memory,
	// restored from the changelogs at every start).
	StateDir   string
	Sinks      sinks.RunnerConfig
	Logger     hclog.Logger
	Registerer prometheus.Registerer
	// Now is the clock of ledger timestamps and retry budgets. Nil:
	// time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends. Nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand is the jitter source. Nil: seeded from the clock.
	Rand *rand.Rand
	// PurgeInterval is how often, at most, the outbox records of one
	// partition below the committed offset are deleted. Zero:
	// DefaultPurgeInterval.
	PurgeInterval time.Duration
	// ExpireInterval is how often, at most, the ledger entries past the
	// ledger retention (Sinks.LedgerRetention) are deleted. Zero:
	// DefaultExpireInterval.
	ExpireInterval time.Duration
	// StallTimeout is how long the runner may make no progress before
	// Health reports a stall (never less than AttemptTimeout plus
	// BackoffCap). Zero: DefaultStallTimeout.
	StallTimeout time.Duration
}

// sink is one outbox and what it delivers to.
type sink struct {
	name       string
	outbox     string
	dlq        string
	ledger     string
	deliverer  sinks.Sink
	idempotent bool
	// defaultKeys: idempotency keys are the default ones, made from the
	// consumed record's coordinates (no key function).
	defaultKeys bool
}

// Runner delivers the outboxes of one application.
type Runner struct {
	cfg    Config
	log    hclog.Logger
	m      *metrics
	sinks  map[string]*sink // by outbox topic
	topics []string
	rndMu  sync.Mutex
	rnd    *rand.Rand

	crashed atomic.Bool
	admin   *kafka.Admin
	ledgers *ledgers
	p       *kafka.Producer
	tp      *kafka.Producer
	purge   *purger

	progress progress
	stats    ledgerStats
	// ledgerFault, when set, fails the ledger writes it returns an error
	// for, before anything is sent. For tests.
	ledgerFault func(key string, e Entry) error
}

// New prepares a runner for the outboxes of g (a graph already named
// after the application, WithPrefix); it does no I/O.
func New(cfg Config, g *graph.Graph) (*Runner, error) {
	cfg.Sinks = withDefaults(cfg.Sinks)
	if err := cfg.Sinks.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.StallTimeout == 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	if cfg.PurgeInterval == 0 {
		cfg.PurgeInterval = DefaultPurgeInterval
	}
	if cfg.ExpireInterval == 0 {
		cfg.ExpireInterval = DefaultExpireInterval
	}
	if cfg.Rand == nil {
		seed := uint64(time.Now().UnixNano())
		cfg.Rand = rand.New(rand.NewPCG(seed, seed>>1))
	}
	r := &Runner{cfg: cfg, log: cfg.Logger.Named("sinks"), sinks: map[string]*sink{}, rnd: cfg.Rand}
	var names []string
	for _, n := range g.Outboxes() {
		d, ok := n.Outbox.Deliverer.(sinks.Sink)
		if !ok || d == nil {
			return nil, fmt.Errorf("sinkrunner: sink %q has no Sink", n.Outbox.Sink)
		}
		s := &sink{name: n.Outbox.Sink, outbox: n.Topic, dlq: graph.DLQTopic(n.Topic), ledger: graph.LedgerTopic(n.Topic), deliverer: d,
			defaultKeys: n.Outbox.Key == nil}
		if i, ok := d.(sinks.Idempotent); ok {
			s.idempotent = i.Idempotent()
		}
		r.sinks[n.Topic] = s
		r.topics = append(r.topics, n.Topic)
		names = append(names, s.name)
	}
	m, err := newMetrics(cfg.Registerer, cfg.AppID, cfg.InstanceID, names)
	if err != nil {
		return nil, fmt.Errorf("sinkrunner: register metrics: %w", err)
	}
	r.m = m
	return r, nil
}

// Purges returns how many outbox purges (one DeleteRecords call per
// topic) succeeded.
func (r *Runner) Purges() int64 { return r.m.purges.Load() }

// Topics lists the outbox topics the runner reads.
func (r *Runner) Topics() []string { return r.topics }

// Crash makes the runner stop as if killed: no ledger write and no offset
// commit after it. For tests.
func (r *Runner) Crash() { r.crashed.Store(true) }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Run delivers until ctx ends. With no outbox it returns at once.
func (r *Runner) Run(ctx context.Context) error {
	if len(r.topics) == 0 {
		return nil
	}
	r.progress.touch(r.cfg.Now())
	admin, err := kafka.Connect(ctx, r.cfg.Client)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while connecting: a clean stop
		}
		return fmt.Errorf("sinkrunner: %w", err)
	}
	defer admin.Close()
	r.admin = admin
	if err := r.prepare(ctx, admin); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while waiting for the outboxes
		}
		return err
	}
	r.purge = newPurger(admin, r.cfg.PurgeInterval, r.cfg.Now, r.log, &r.m.purges)
	defer r.purge.wait()
	dir := ""
	if r.cfg.StateDir != "" {
		dir = filepath.Join(r.cfg.StateDir, "sinks")
	}
	// No fsync per ledger write: every entry is in the changelog (acknowledged)
	// before Pebble has it, and Pebble records the changelog offset in the
	// same batch, so a crash that loses unsynced batches loses their
	// offsets too and restore replays them from the changelog.
	db, err := statestore.Open(dir, statestore.Options{Logger: r.log, NoSync: true})
	if err != nil {
		return fmt.Errorf("sinkrunner: ledger: %w", err)
	}
	defer db.Close()
	if err := r.openLedgers(db); err != nil {
		return err
	}
	defer r.closeLedgers()
	group, err := kafka.NewBalancedGroup(r.cfg.Client, r.cfg.Timeouts, r.cfg.AppID+"-sinks", r.cfg.InstanceID, 0)
	if err != nil {
		return fmt.Errorf("sinkrunner: %w", err)
	}
	defer group.Close()
	go func() {
		for err := range group.Errors() {
			r.log.Warn("group error", "error", err)
		}
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil && !r.crashed.Load() {
		sctx, end := context.WithCancel(ctx)
		err := group.Consume(sctx, r.topics, &session{r: r, end: end})
		end()
		if ferr := r.ledgers.failed(); ferr != nil && !r.crashed.Load() {
			// The changelog may hold writes Pebble lacks: the next
			// session's restore reads them. The writer starts afresh.
			r.log.Warn("a ledger write failed; opening the ledgers again", "error", ferr)
			r.closeLedgers()
			for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
				oerr := r.openLedgers(db)
				if oerr == nil {
					break
				}
				if ctx.Err() != nil {
					return nil
				}
				r.log.Warn("cannot open the ledgers; trying again", "error", oerr, "backoff", wait)
				_ = r.cfg.Sleep(ctx, wait)
			}
		}
		if errors.Is(err, kafka.ErrFencedInstance) {
			return fmt.Errorf("sinkrunner: %w", err)
		}
		if errors.Is(err, errSessionEnded) {
			r.log.Debug("session ended during its setup; joining again", "error", err)
			backoff = 100 * time.Millisecond
			continue
		}
		if err != nil && ctx.Err() == nil {
			r.log.Warn("group session failed; joining again", "error", err, "backoff", backoff)
			_ = r.cfg.Sleep(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
	if !r.crashed.Load() {
		if err := group.Leave(); err != nil {
			r.log.Warn("leave group", "error", err)
		}
	}
	return nil
}

// TransactionalID is the transactional id of the runner's dead-letter
// writes: "<app id>-<instance id>/sinks" (an instance id holds no '/', so
// it is never a replica's own).
func TransactionalID(app, instance string) string { return app + "-" + instance + "/sinks" }

// ledgerLinger is how long the ledger producer gathers records before it
// sends them: the writer sends a batch's records at once, microseconds
// apart, then waits for all of them, so a millisecond puts the whole batch
// in one request per broker instead of several round trips.
const ledgerLinger = time.Millisecond

// openLedgers starts the ledger writer with producers of its own. The
// transactional one is initialised at once, which aborts a transaction
// the runner's previous process left open.
func (r *Runner) openLedgers(db *statestore.DB) error {
	p, err := kafka.NewBurstProducer(r.cfg.Client, r.cfg.Timeouts, ledgerLinger)
	if err != nil {
		return fmt.Errorf("sinkrunner: %w", err)
	}
	tp, err := kafka.NewProducer(r.cfg.Client, r.cfg.Timeouts, TransactionalID(r.cfg.AppID, r.cfg.InstanceID), true, 0)
	if err != nil {
		p.Close()
		return fmt.Errorf("sinkrunner: %w", err)
	}
	r.p, r.tp = p, tp
	r.ledgers = newLedgers(db, p, tp, kafka.NewChangelogReader(r.cfg.Client, r.cfg.Timeouts.WithDefaults().Transaction))
	r.ledgers.fault = r.ledgerFault
	r.ledgers.stats = &r.stats
	return nil
}

// closeLedgers stops the ledger writer and its producer; a second call
// does nothing.
func (r *Runner) closeLedgers() {
	if r.ledgers == nil {
		return
	}
	r.ledgers.close()
	r.p.Close()
	r.tp.Close()
	r.ledgers, r.p, r.tp = nil, nil, nil
}

// prepare creates the dead-letter topics (unlimited retention) and ledger
// changelog topics, with the partition count of their outboxes (the
// engine creates the outboxes; a runner that starts first waits for them,
// until ctx ends).
func (r *Runner) prepare(ctx context.Context, admin *kafka.Admin) error {
	for _, t := range r.topics {
		s := r.sinks[t]
		var n int32
		for i := 0; ; i++ {
			have, err := admin.Partitions(t)
			if err != nil {
				return fmt.Errorf("sinkrunner: %w", err)
			}
			if n = have[t]; n > 0 {
				break
			}
			if i == 0 {
				r.log.Info("waiting for the outbox topic", "topic", t)
			}
			if err := r.cfg.Sleep(ctx, 200*time.Millisecond); err != nil {
				return err
			}
			if i > 300 {
				return fmt.Errorf("sinkrunner: outbox topic %q does not exist (%w)", t, kafka.ErrTopicMissing)
			}
		}
		if _, err := admin.Ensure(map[string]int32{s.dlq: n}, kafka.KeepForeverConfigs()); err != nil {
			return fmt.Errorf("sinkrunner: dead-letter topic: %w", err)
		}
		if err := r.keepForever(admin, s.dlq); err != nil {
			return err
		}
		compact := "compact"
		if _, err := admin.Ensure(map[string]int32{s.ledger: n}, map[string]*string{"cleanup.policy": &compact}); err != nil {
			return fmt.Errorf("sinkrunner: ledger changelog: %w", err)
		}
	}
	return nil
}

// keepForever removes the time and size retention of a dead-letter topic
// (one created by an earlier release with the broker's defaults): a dead
// letter exists nowhere else once its outbox is purged. A retention it
// cannot remove stops the runner with an error that says what to run; one
// it cannot read is a warning.
func (r *Runner) keepForever(admin *kafka.Admin, topic string) error {
	replaced, err := admin.KeepForever(topic)
	switch {
	case errors.Is(err, kafka.ErrRetentionUnknown):
		r.log.Warn("cannot read the dead-letter topic's retention; dead letters may be deleted unless retention.ms and retention.bytes are -1", "topic", topic, "error", err)
		return nil
	case err != nil:
		return fmt.Errorf("sinkrunner: dead-letter topic: %w", err)
	case len(replaced) > 0:
		r.log.Info("dead-letter topic now keeps its records until they are handled", "topic", topic, "replaced", replaced)
	}
	return nil
}

// backoff draws the wait before the retry after the n-th failed attempt.
func (r *Runner) backoff(n int, retryAfter time.Duration) time.Duration {
	r.rndMu.Lock()
	defer r.rndMu.Unlock()
	c := r.cfg.Sinks
	return backoff(c.BackoffBase, c.BackoffCap, n, retryAfter, r.rnd)
}
