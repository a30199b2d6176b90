package embedded

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Config configures an embedded broker. The zero value is a valid in-memory
// broker on a random loopback port.
type Config struct {
	// Addr is the host:port to listen on. The host must be a loopback
	// address (kfake listens on 127.0.0.1 only). Default "" listens on
	// 127.0.0.1 with a random free port; Broker.Addrs reports it.
	Addr string

	// DataDir enables persistence in that directory (created if needed):
	// topics, offsets, groups and producer state survive a clean stop
	// (Close) and a start on the same directory. Only one broker may use
	// a directory at a time. State left by a broker that did not stop
	// cleanly (killed, crashed) is refused with ErrUncleanStop: kfake
	// cannot recover open transactions correctly after a crash. Default ""
	// keeps everything in memory.
	DataDir string

	// WipeUncleanDataDir empties a DataDir left by an unclean stop instead
	// of refusing it, so the broker starts with no topics. Default false:
	// Start returns ErrUncleanStop.
	WipeUncleanDataDir bool

	// AutoCreateTopics lets metadata requests that ask for it create
	// missing topics (with 6 partitions), like Kafka's
	// auto.create.topics.enable. Default false: a client naming a missing
	// topic gets UNKNOWN_TOPIC_OR_PARTITION, so a misspelt topic fails
	// loudly; create topics explicitly.
	AutoCreateTopics bool

	// Logger receives the broker's log lines (kfake's info level maps to
	// debug). Default nil: no logging.
	Logger hclog.Logger
}

// GroupMinSessionTimeout is the smallest consumer-group session timeout the
// embedded broker accepts (Kafka's default is 6 s). It is low so that tests
// can use short sessions and see failed members leave quickly.
const GroupMinSessionTimeout = time.Second

// DefaultPartitions is the partition count of topics created without one
// (auto-created, or CreateTopics with -1).
const DefaultPartitions = 6

// brokerConfigs are the broker-level settings a transactional workload on a
// single broker needs. kfake's defaults already allow transactions up to
// 15 minutes; these are pinned here so a kfake upgrade cannot change them
// silently.
var brokerConfigs = map[string]string{
	// Transactions: the engine's transaction timeout must be accepted.
	"transaction.max.timeout.ms": "900000",
	// One broker: topics created with the broker default replicate once.
	"default.replication.factor": "1",
	"min.insync.replicas":        "1",
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	if c.Addr == "" {
		return nil
	}
	_, err := c.port()
	return err
}

// port parses Addr and returns the port to listen on (0: random).
func (c Config) port() (int, error) {
	if c.Addr == "" {
		return 0, nil
	}
	host, p, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return 0, fmt.Errorf("embedded: address %q: %w", c.Addr, err)
	}
	var errs []error
	switch host {
	case "", "127.0.0.1", "localhost":
	default:
		errs = append(errs, fmt.Errorf("embedded: address %q: host must be 127.0.0.1 (the embedded broker listens on loopback only)", c.Addr))
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		errs = append(errs, fmt.Errorf("embedded: address %q: port must be a number from 0 to 65535", c.Addr))
	}
	return port, errors.Join(errs...)
}

// Broker is a running embedded broker. Close stops it.
type Broker struct {
	c    *kfake.Cluster
	dir  *dataDir // nil without DataDir
	log  *logger
	once sync.Once
}

// ErrAddrInUse is returned (wrapped) by Start when the requested address is
// already taken by another process. It is retryable once that process exits.
var ErrAddrInUse = errors.New("embedded: address already in use")

// Start starts a broker and returns once it accepts connections.
func Start(cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	port, _ := cfg.port()
	hlog := cfg.Logger
	if hlog == nil {
		hlog = hclog.NewNullLogger()
	}
	log := &logger{l: hlog}
	opts := []kfake.Opt{
		kfake.WithLogger(log),
		kfake.NumBrokers(1),
		kfake.ClusterID("onceflow-embedded"),
		kfake.GroupMinSessionTimeout(GroupMinSessionTimeout),
		kfake.BrokerConfigs(brokerConfigs),
		kfake.DefaultNumPartitions(DefaultPartitions),
	}
	if cfg.AutoCreateTopics {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if port != 0 {
		opts = append(opts, kfake.Ports(port))
	}
	var dir *dataDir
	if cfg.DataDir != "" {
		var err error
		if dir, err = openDataDir(cfg.DataDir, cfg.WipeUncleanDataDir, hlog); err != nil {
			return nil, err
		}
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		if dir != nil {
			dir.release()
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%w: %s: stop whatever listens there or choose another --addr", ErrAddrInUse, cfg.Addr)
		}
		return nil, fmt.Errorf("embedded: start broker: %w", err)
	}
	return &Broker{c: c, dir: dir, log: log}, nil
}

// Addrs returns the host:port addresses the broker listens on, usable as a
// client's seed brokers.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// Cluster returns the underlying kfake cluster, for fault injection and
// inspection in tests.
func (b *Broker) Cluster() *kfake.Cluster { return b.c }

// Close stops the broker. With DataDir, it saves the broker's state and
// then records the clean stop that lets the next Start use the directory;
// if saving failed, the record is not written and the next Start refuses
// the directory. It is safe to call more than once.
func (b *Broker) Close() {
	b.once.Do(func() {
		b.c.Close()
		if b.dir == nil {
			return
		}
		defer b.dir.release()
		if b.log.persistFailed.Load() {
			b.log.l.Error("broker state not saved; the data dir will be refused at the next start", "dir", b.dir.path)
			return
		}
		if err := b.dir.markClean(); err != nil {
			b.log.l.Error("clean stop not recorded; the data dir will be refused at the next start", "dir", b.dir.path, "error", err)
		}
	})
}

// logger adapts hclog to kfake's logger, and notes whether kfake reported
// a failure to persist its state.
type logger struct {
	l             hclog.Logger
	persistFailed atomic.Bool
}

func (l *logger) Logf(level kfake.LogLevel, msg string, args ...any) {
	switch level {
	case kfake.LogLevelError:
		// kfake's errors about its data dir: "persist to disk: ...",
		// "save session state: ...", "endTx: failed to persist ...".
		if strings.Contains(msg, "persist") || strings.Contains(msg, "save session state") {
			l.persistFailed.Store(true)
		}
		if l.l.IsError() {
			l.l.Error(fmt.Sprintf(msg, args...))
		}
	case kfake.LogLevelWarn:
		if l.l.IsWarn() {
			l.l.Warn(fmt.Sprintf(msg, args...))
		}
	case kfake.LogLevelInfo:
		if l.l.IsDebug() {
			l.l.Debug(fmt.Sprintf(msg, args...))
		}
	case kfake.LogLevelDebug:
		if l.l.IsTrace() {
			l.l.Trace(fmt.Sprintf(msg, args...))
		}
	}
}
