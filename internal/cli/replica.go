package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// ReplicaFlags are the flags of every replica.
type ReplicaFlags struct {
	ClientFlags
	SecurityFlags
	AppID          string        `name:"app-id" help:"Application id: the consumer group, the transactional id prefix, internal topic prefix (default: the topology's name)."`
	InstanceID     string        `name:"instance-id" required:"" env:"ONCEFLOW_INSTANCE_ID" help:"This replica's id: stable across restarts, unique among live replicas."`
	Guarantee      string        `name:"guarantee" default:"exactly_once" enum:"exactly_once,at_least_once" help:"Delivery guarantee (${enum})."`
	StateDir       string        `name:"state-dir" type:"path" help:"Directory for local state."`
	MetricsAddr    string        `name:"metrics-addr" help:"Serve /metrics, /healthz, /readyz and the status page (/) on this address: a port alone (9100 or :9100) listens on loopback only; name the host to listen elsewhere (0.0.0.0:9100: every interface, as in a container). Default: not served."`
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

// AppIDOf is the application id of a replica of t: --app-id, or t's name.
func (f ReplicaFlags) AppIDOf(t *topology.Topology) string {
	if f.AppID != "" {
		return f.AppID
	}
	return t.Name()
}

// RunReplica runs one replica of t until env.Ctx ends, then stops within
// the processor's stop bound and prints a closing summary on stderr.
func RunReplica(env *Env, f ReplicaFlags, t *topology.Topology) error {
	tlsCfg, err := f.TLSConfig()
	if err != nil {
		return err
	}
	appID := f.AppIDOf(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p, err := processor.New(processor.Config{
		Brokers:           f.BrokerList(),
		ApplicationID:     appID,
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
	env.Logger.Info("replica starting", "app", appID, "instance", f.InstanceID, "guarantee", f.Guarantee, "stop_bound", p.StopBound())
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-env.Ctx.Done():
			env.Logger.Info("replica stopping", "instance", f.InstanceID, "within", p.StopBound())
		case <-stopped:
		}
	}()
	err = p.Run(env.Ctx)
	s := p.Stats()
	env.Summary(fmt.Sprintf("%s stopped: %d in, %d out, %d rejected, %d committed, %d aborted, %d producer recreations, %d restored",
		f.InstanceID, s.RecordsIn, s.RecordsOut, s.Rejected, s.Committed, s.Aborted, s.ProducerRecreations, s.Restored),
		"instance", f.InstanceID, "records_in", s.RecordsIn, "records_out", s.RecordsOut, "rejected", s.Rejected, "committed", s.Committed,
		"aborted", s.Aborted, "producer_recreations", s.ProducerRecreations, "restored", s.Restored)
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

// ListenAddr is where --metrics-addr listens: a port alone ("9100" or
// ":9100") means loopback, so that metrics and health are never exposed
// beyond the machine unless a host is named ("0.0.0.0:9100").
func ListenAddr(addr string) string {
	if !strings.Contains(addr, ":") {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// serve serves h on addr (see ListenAddr) until stop is called.
func serve(env *Env, addr string, h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", ListenAddr(addr))
	if err != nil {
		return nil, fmt.Errorf("metrics address %q: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	env.Logger.Info("serving", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz /")
	return func() { srv.Close() }, nil
}
