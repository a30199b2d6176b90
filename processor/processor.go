package processor

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"regexp"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/statedir"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
	"golang.org/x/sync/errgroup"
)

// Guarantee is the delivery guarantee of a replica.
type Guarantee string

const (
	// ExactlyOnce commits outputs and offsets in one transaction (default).
	ExactlyOnce Guarantee = "exactly_once"
	// AtLeastOnce commits offsets after outputs are acknowledged; records
	// may repeat after a failure. For comparison and for idempotent sinks.
	AtLeastOnce Guarantee = "at_least_once"
)

// Config configures one replica. The zero value of each field means its
// default, as documented.
type Config struct {
	// Brokers are the bootstrap addresses, host:port. Required.
	Brokers []string
	// ApplicationID names the consumer group and prefixes the
	// transactional id and internal topics. Required.
	ApplicationID string
	// InstanceID is this replica's static member id (KIP-345) and the
	// suffix of its transactional id: stable across restarts, unique among
	// live replicas. Required.
	InstanceID string
	// Guarantee: ExactlyOnce (default) or AtLeastOnce.
	Guarantee Guarantee
	// CommitInterval: how often a transaction commits. Default 100 ms.
	CommitInterval time.Duration
	// CommitRecords: commit early after this many consumed records.
	// Default 50000: a bound on a transaction's size, rarely reached at the
	// default interval.
	CommitRecords int
	// MaxClockSkew is how far ahead of this replica's wall clock a record's
	// timestamp may move a task's stream time (which dedup retention is
	// measured in). A record stamped further ahead is processed, but stream
	// time advances only to wall clock + MaxClockSkew, so one clock-skewed
	// record cannot expire every remembered event id; such records are
	// counted in onceflow_clock_skewed_records_total. Default 1 hour (as
	// Kafka 4's broker default for log.message.timestamp.after.max.ms).
	MaxClockSkew time.Duration
	// SessionTimeout of the group membership. Default 10 s.
	SessionTimeout time.Duration
	// TransactionTimeout: must be below SessionTimeout. Default 8 s (or
	// 4/5 of SessionTimeout when that is smaller).
	TransactionTimeout time.Duration
	// RebalanceTimeout: how long a rebalance waits for members. Default 30 s.
	RebalanceTimeout time.Duration
	// CommitTimeout bounds each step that ends a transaction (adding the
	// offsets, committing, aborting; at-least-once: the flush and the
	// offset commit). A step that runs out of it has an unknown outcome:
	// the replica drops its producer, creates it again with the same
	// transactional id (which fences the old one and aborts its
	// transaction) and rewinds. Must be below TransactionTimeout. Default:
	// half the TransactionTimeout (4 s).
	CommitTimeout time.Duration
	// StallTimeout: how long an assigned partition may have input pending
	// without a commit (a hung commit, a loop of aborts and rewinds), or a
	// restore go without restoring a record, before the replica reports a
	// stall: a warning naming the partition, the
	// onceflow_stalled_partitions gauge, and /healthz failing with the
	// reason. Default 2 minutes.
	StallTimeout time.Duration
	// StateDir holds the replica's Pebble database (topologies with
	// stores). Default "": state lives in memory and every start restores
	// it from the changelogs. Give each replica its own directory.
	StateDir string
	// StateCleanupDelay: how long the local state of a task that moved to
	// another replica is kept (it comes back cheaply if the task does)
	// before it is deleted, like Kafka Streams' state.cleanup.delay.ms.
	// Default 10 min. Independently of it, a task's state older than its
	// changelog's delete.retention.ms is never restored from: it is wiped
	// and restored fully.
	StateCleanupDelay time.Duration
	// TLS enables TLS with this configuration. Default: plaintext.
	TLS *tls.Config
	// SASLMechanism: "" (none), "PLAIN", "SCRAM-SHA-256" or
	// "SCRAM-SHA-512" (any case), with SASLUser and SASLPassword (both
	// required with a mechanism). Every connection of the replica uses it:
	// the group, the producers, the admin client and the changelog reader.
	// The password is never logged. The principal needs the ACLs listed in
	// docs/security.md.
	SASLMechanism string
	SASLUser      string
	SASLPassword  string
	// Dial, when set, opens every connection to the brokers in place of a
	// plain TCP dial (through a tunnel, or a proxy that injects network
	// faults, as onceflow chaos does); TLS and SASL run over the
	// connection it returns. Default nil: TCP.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Sinks configures the sink runner, which delivers the requests of
	// the topology's external sinks (topology.ToSink): timeouts, retries,
	// backoff and parallelism, each field with its default (see
	// sinks.RunnerConfig). The runner runs in every replica, in a
	// consumer group of its own ("<application id>-sinks"), when the
	// topology has sinks.
	Sinks sinks.RunnerConfig
	// OnlySinks runs the sink runner alone, without processing: a replica
	// that only delivers. Default false.
	OnlySinks bool
	// Logger: default a null logger.
	Logger hclog.Logger
	// Registerer receives the metrics. Default: no metrics.
	Registerer prometheus.Registerer
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Validate returns every problem at once.
func (c Config) Validate() error {
	var errs []error
	if err := c.Sinks.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.client().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ApplicationID == "" {
		errs = append(errs, errors.New("application id is empty"))
	} else if !idPattern.MatchString(c.ApplicationID) {
		errs = append(errs, fmt.Errorf("application id %q: only letters, digits, '.', '_' and '-'", c.ApplicationID))
	}
	if c.InstanceID == "" {
		errs = append(errs, errors.New("instance id is empty: give each replica a stable, unique id"))
	} else if !idPattern.MatchString(c.InstanceID) {
		errs = append(errs, fmt.Errorf("instance id %q: only letters, digits, '.', '_' and '-'", c.InstanceID))
	}
	switch c.Guarantee {
	case "", ExactlyOnce, AtLeastOnce:
	default:
		errs = append(errs, fmt.Errorf("guarantee %q: want %q or %q", c.Guarantee, ExactlyOnce, AtLeastOnce))
	}
	if c.CommitInterval < 0 || c.CommitInterval > 0 && c.CommitInterval < time.Millisecond {
		errs = append(errs, fmt.Errorf("commit interval %v: want at least 1ms", c.CommitInterval))
	}
	if c.CommitRecords < 0 {
		errs = append(errs, fmt.Errorf("commit records %d is negative", c.CommitRecords))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"max clock skew", c.MaxClockSkew}, {"session timeout", c.SessionTimeout}, {"transaction timeout", c.TransactionTimeout}, {"rebalance timeout", c.RebalanceTimeout}, {"state cleanup delay", c.StateCleanupDelay},
		{"commit timeout", c.CommitTimeout}, {"stall timeout", c.StallTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", d.name, d.v))
		}
	}
	if err := c.timeouts().Validate(); err != nil {
		errs = append(errs, err)
	}
	if ci := c.withDefaults().CommitInterval; ci >= c.timeouts().Transaction {
		errs = append(errs, fmt.Errorf("commit interval %v must be below the transaction timeout %v", ci, c.timeouts().Transaction))
	}
	return errors.Join(errs...)
}

// withDefaults fills the zero fields that have defaults.
func (c Config) withDefaults() Config {
	if c.CommitInterval == 0 {
		c.CommitInterval = 100 * time.Millisecond
	}
	if c.CommitRecords == 0 {
		c.CommitRecords = 50000
	}
	if c.Guarantee == "" {
		c.Guarantee = ExactlyOnce
	}
	if c.MaxClockSkew == 0 {
		c.MaxClockSkew = time.Hour
	}
	return c
}

func (c Config) client() kafka.Client {
	return kafka.Client{Brokers: c.Brokers, ClientID: "onceflow-" + c.ApplicationID + "-" + c.InstanceID, TLS: c.TLS,
		SASL: kafka.SASL{Mechanism: c.SASLMechanism, User: c.SASLUser, Password: c.SASLPassword}, Dial: c.Dial}
}

func (c Config) timeouts() kafka.Timeouts {
	return kafka.Timeouts{Session: c.SessionTimeout, Rebalance: c.RebalanceTimeout, Transaction: c.TransactionTimeout, Commit: c.CommitTimeout}.WithDefaults()
}

// Processor is one replica of an application.
type Processor struct {
	log hclog.Logger
	cfg Config
	g   *graph.Graph
	e   *engine.Engine
	run *sinkrunner.Runner
}

// New checks the configuration and the topology and returns every problem
// at once. It does no I/O.
func New(cfg Config, t *topology.Topology) (*Processor, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, &prefixed{prefix: "processor: config: ", err: err})
	}
	var g *graph.Graph
	if t == nil {
		errs = append(errs, errors.New("processor: topology is nil"))
	} else {
		var err error
		if g, err = graph.Compile(t); err != nil {
			errs = append(errs, fmt.Errorf("processor: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &prefixed{prefix: "processor: ", err: err}
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	e, err := engine.New(engine.Config{
		Client:         cfg.client(),
		Timeouts:       cfg.timeouts(),
		AppID:          cfg.ApplicationID,
		InstanceID:     cfg.InstanceID,
		ExactlyOnce:    cfg.Guarantee == ExactlyOnce,
		CommitInterval: cfg.CommitInterval,
		CommitRecords:  cfg.CommitRecords,
		MaxClockSkew:   cfg.MaxClockSkew,
		StateDir:       cfg.StateDir,
		CleanupDelay:   cfg.StateCleanupDelay,
		Logger:         log.Named("processor").With("instance", cfg.InstanceID),
		Registerer:     cfg.Registerer,
		StallTimeout:   cfg.StallTimeout,
	}, g)
	if err != nil {
		return nil, fmt.Errorf("processor: %w", err)
	}
	run, err := sinkrunner.New(sinkrunner.Config{
		Client:       cfg.client(),
		Timeouts:     cfg.timeouts(),
		AppID:        cfg.ApplicationID,
		InstanceID:   cfg.InstanceID,
		StateDir:     cfg.StateDir,
		Sinks:        cfg.Sinks,
		StallTimeout: cfg.StallTimeout,
		Logger:       log.Named("processor").With("instance", cfg.InstanceID),
		Registerer:   cfg.Registerer,
	}, g.WithPrefix(cfg.ApplicationID))
	if err != nil {
		return nil, fmt.Errorf("processor: %w", err)
	}
	return &Processor{log: log, cfg: cfg, g: g, e: e, run: run}, nil
}

// Run processes until ctx ends, then commits or aborts the open
// transaction, leaves the group and returns nil. It returns an error when
// the replica cannot start (brokers unreachable, input topic missing,
// topics not co-partitioned) or cannot go on (another live replica has the
// same instance id).
//
// Once ctx ends, Run returns within StopBound: two commit timeouts (the
// last commit, or its abort) plus 11 s to leave the group and close the
// clients; 19 s with the default timeouts, even when the transaction
// coordinator does not answer. Past the bound it returns an error and
// leaves the clients to close in the background.
//
// The sink runner runs beside the engine (alone with Config.OnlySinks);
// the first of the two to fail stops the other.
func (p *Processor) Run(ctx context.Context) error {
	if p.cfg.StateDir != "" {
		// One process at a time on a state dir: a second replica (or a
		// reset) is told who holds it, before any store is opened.
		lock, err := statedir.Acquire(p.cfg.StateDir)
		if err != nil {
			return publicError(err)
		}
		defer lock.Release()
	}
	if p.cfg.OnlySinks {
		return publicError(p.run.Run(ctx))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.e.Run(gctx) })
	g.Go(func() error { return p.run.Run(gctx) })
	return publicError(g.Wait())
}

// StopBound is how long Run may take to return once its context ends.
func (p *Processor) StopBound() time.Duration { return engine.StopBound(p.cfg.timeouts()) }

// Health returns nil while the replica makes progress, or the stall it
// reports on /healthz (see Config.StallTimeout). With OnlySinks it
// describes the sink runner: a stall is deliveries held with none settled
// or attempted, or no group session, for longer than the stall timeout
// (and never less than one attempt timeout plus the backoff cap).
func (p *Processor) Health() error {
	if p.cfg.OnlySinks {
		return p.run.Health()
	}
	return p.e.Health()
}

// Ready reports whether the replica is in a group session with its tasks
// restored, processing. With OnlySinks: whether the sink runner is in a
// group session with the delivery ledgers of its partitions restored.
func (p *Processor) Ready() bool {
	if p.cfg.OnlySinks {
		return p.run.Ready()
	}
	return p.e.Ready()
}

// Stats returns a snapshot of the counters.
func (p *Processor) Stats() Stats { return statsOf(p.e.Stats()) }

// RejectedTopic is the topic rejected records go to: "<ApplicationID>-rejected".
func (p *Processor) RejectedTopic() string { return p.e.RejectedTopic() }
