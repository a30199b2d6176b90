package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/onceflow/onceflow/examples/allstages"
	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/httpsink"
	"github.com/onceflow/onceflow/sinks/pgsink"
	"github.com/onceflow/onceflow/topology"
)

// RunCmd runs one replica of a built-in topology until SIGINT or SIGTERM.
type RunCmd struct {
	Copy      RunCopyCmd      `cmd:"" help:"The copy topology: every input record to the output, key and value unchanged, with a lineage header."`
	Orders    RunOrdersCmd    `cmd:"" help:"The orders topology: dedup by event id, version gate per order, per-customer totals."`
	Pageviews RunPageviewsCmd `cmd:"" help:"The pageviews topology: final view counts per user per hour, 5 minutes of grace."`
	Allstages RunAllstagesCmd `cmd:"" help:"The allstages topology: every kind of stage (merge, gates, aggregates, fan-out, repartition, through, every window kind, punctuators, sinks); what onceflow chaos --topology allstages runs."`
}

// RunAllstagesCmd is `onceflow run allstages`.
type RunAllstagesCmd struct {
	ReplicaFlags
	Prefix  string `name:"topic-prefix" required:"" help:"Prefix of the topics: reads <prefix>-web and <prefix>-app, writes <prefix>-account-counts, -item-counts, -ticks, -lines (through) and -windows."`
	Webhook string `name:"webhook" placeholder:"URL" help:"Deliver the line-hook and tick-hook sinks to this webhook, declared not idempotent (an attempt without an answer is parked as unknown, never re-sent). Default: no sinks."`
}

// Run runs the replica.
func (c *RunAllstagesCmd) Run(env *Env) error {
	var s allstages.Sinks
	if c.Webhook != "" {
		hook, err := httpsink.New(httpsink.Config{URL: c.Webhook, NotIdempotent: true})
		if err != nil {
			return err
		}
		s.Lines, s.Ticks = hook, hook
	}
	return runReplica(env, c.ReplicaFlags, allstages.Topology(c.Prefix, s))
}

// RunOrdersCmd is `onceflow run orders`.
type RunOrdersCmd struct {
	ReplicaFlags
	Input         string `name:"input" required:"" help:"Input topic of order events."`
	Output        string `name:"output" required:"" help:"Output topic of customer totals (created when missing)."`
	Webhook       string `name:"webhook" placeholder:"URL" help:"Notify this webhook once per accepted order (the order-notifications sink: a POST with an Idempotency-Key)."`
	WebhookSecret string `name:"webhook-secret" env:"ONCEFLOW_WEBHOOK_SECRET" help:"Sign webhook deliveries with HMAC-SHA256 and this secret."`
	PG            string `name:"pg" placeholder:"DSN" help:"Write one row per accepted order to this PostgreSQL database (the order-rows sink; tables onceflow_orders and onceflow_sink_keys, created when missing)."`
}

// Run runs the replica.
func (c *RunOrdersCmd) Run(env *Env) error {
	if c.Webhook == "" && c.PG == "" {
		return runReplica(env, c.ReplicaFlags, orders.Topology(c.Input, c.Output))
	}
	var s orders.Sinks
	if c.Webhook != "" {
		hook, err := httpsink.New(httpsink.Config{URL: c.Webhook, Secret: []byte(c.WebhookSecret)})
		if err != nil {
			return err
		}
		s.Notify = hook
	}
	if c.PG != "" {
		pool, err := pgxpool.New(env.Ctx, c.PG)
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		defer pool.Close()
		rows, err := pgsink.New(pgsink.Config{DB: pool, Effect: orders.RowsEffect("")})
		if err != nil {
			return err
		}
		if err := orders.CreateRowsTable(env.Ctx, pool, ""); err != nil {
			return err
		}
		if err := rows.CreateTable(env.Ctx); err != nil {
			return err
		}
		s.Rows = rows
	}
	return runReplica(env, c.ReplicaFlags, orders.TopologyWithSinks(c.Input, c.Output, s))
}

// ReplicaFlags are the flags of every replica.
type ReplicaFlags struct {
	ClientFlags
	SecurityFlags
	AppID          string        `name:"app-id" required:"" help:"Application id: the consumer group, the transactional id prefix, internal topic prefix."`
	InstanceID     string        `name:"instance-id" required:"" help:"This replica's id: stable across restarts, unique among live replicas."`
	Guarantee      string        `name:"guarantee" default:"exactly_once" enum:"exactly_once,at_least_once" help:"Delivery guarantee (${enum})."`
	StateDir       string        `name:"state-dir" type:"path" help:"Directory for local state."`
	MetricsAddr    string        `name:"metrics-addr" help:"Serve /metrics, /healthz and /readyz on this address: a port alone (9100 or :9100) listens on loopback only; name the host to listen elsewhere (0.0.0.0:9100: every interface, as in a container). Default: not served."`
	CommitInterval time.Duration `name:"commit-interval" default:"100ms" help:"How often a transaction commits."`
	CommitTimeout  time.Duration `name:"commit-timeout" help:"Deadline of each step that ends a transaction; past it the producer is dropped and the replica rewinds (0: half the transaction timeout)."`
	StallTimeout   time.Duration `name:"stall-timeout" help:"Report a partition with input pending and no commit for this long (log, metrics, /healthz 503) (0: 2m)."`
	MaxClockSkew   time.Duration `name:"max-clock-skew" help:"How far ahead of the wall clock a record's timestamp may move stream time (0: 1h)."`
	CleanupDelay   time.Duration `name:"state-cleanup-delay" help:"Delete local state of tasks not owned for this long (0: 10m)."`
	OnlySinks      bool          `name:"only-sinks" help:"Run only the sink runner (deliver the external sinks' outboxes), no processing."`
	SinkParallel   int           `name:"sink-parallelism" help:"Deliveries of one outbox partition out at once, each for another record key (0: the default, 16)."`
	// DialVia routes the connections to some brokers through other
	// addresses (onceflow chaos puts a fault-injecting proxy there).
	DialVia map[string]string `name:"dial-via" hidden:"" placeholder:"BROKER=PROXY;..." help:"Connect to BROKER through PROXY."`
	// CPUProfile writes a CPU profile of the whole run (restore included)
	// to a file, for measuring the replica end to end.
	CPUProfile string `name:"cpu-profile" hidden:"" type:"path" help:"Write a CPU profile of the run to this file."`
}

// RunCopyCmd is `onceflow run copy`.
type RunCopyCmd struct {
	ReplicaFlags
	Input  string `name:"input" required:"" help:"Input topic."`
	Output string `name:"output" required:"" help:"Output topic (created when missing)."`
}

// Run runs the replica.
func (c *RunCopyCmd) Run(env *Env) error {
	return runReplica(env, c.ReplicaFlags, copyex.Topology(c.Input, c.Output))
}

func runReplica(env *Env, f ReplicaFlags, t *topology.Topology) error {
	tlsCfg, err := f.tlsConfig()
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p, err := processor.New(processor.Config{
		Brokers:           f.BrokerList(),
		ApplicationID:     f.AppID,
		InstanceID:        f.InstanceID,
		Guarantee:         processor.Guarantee(f.Guarantee),
		CommitInterval:    f.CommitInterval,
		CommitTimeout:     f.CommitTimeout,
		StallTimeout:      f.StallTimeout,
		MaxClockSkew:      f.MaxClockSkew,
		StateCleanupDelay: f.CleanupDelay,
		StateDir:          f.StateDir,
		OnlySinks:         f.OnlySinks,
		Sinks:             sinks.RunnerConfig{Parallelism: f.SinkParallel},
		TLS:               tlsCfg,
		SASLMechanism:     f.SASLMechanism,
		SASLUser:          f.SASLUser,
		SASLPassword:      f.SASLPassword,
		Dial:              dialVia(f.DialVia),
		Logger:            env.Logger,
		Registerer:        reg,
	}, t)
	if err != nil {
		return err
	}
	if f.MetricsAddr != "" {
		stop, err := serve(env, f.MetricsAddr, p.Handler(reg))
		if err != nil {
			return err
		}
		defer stop()
	}
	if f.CPUProfile != "" {
		stop, err := startCPUProfile(f.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	env.Logger.Info("replica starting", "app", f.AppID, "instance", f.InstanceID, "guarantee", f.Guarantee)
	err = p.Run(env.Ctx)
	s := p.Stats()
	fmt.Fprintf(env.Stderr, "onceflow: %s stopped: %d in, %d out, %d rejected, %d committed, %d aborted, %d producer recreations, %d restored\n",
		f.InstanceID, s.RecordsIn, s.RecordsOut, s.Rejected, s.Committed, s.Aborted, s.ProducerRecreations, s.Restored)
	return err
}

// startCPUProfile profiles the process's CPU into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// dialVia dials the address via maps it to, others directly; nil when
// via is empty.
func dialVia(via map[string]string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if len(via) == 0 {
		return nil
	}
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := via[addr]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}
}

// listenAddr is where --metrics-addr listens: a port alone ("9100" or
// ":9100") means loopback, so that metrics and health are never exposed
// beyond the machine unless a host is named ("0.0.0.0:9100").
func listenAddr(addr string) string {
	if !strings.Contains(addr, ":") {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// serve serves h on addr (see listenAddr) until stop is called.
func serve(env *Env, addr string, h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", listenAddr(addr))
	if err != nil {
		return nil, fmt.Errorf("metrics address %q: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	env.Logger.Info("serving", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz")
	return func() { srv.Close() }, nil
}
