package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// SASL holds SASL credentials.
type SASL struct {
	Mechanism string // "" (none), "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512", in any case
	User      string
	Password  string
}

// Client is what every connection to the cluster needs.
type Client struct {
	Brokers  []string
	ClientID string
	TLS      *tls.Config // nil: plaintext
	SASL     SASL
	// Dial, when set, opens every connection of the engine's clients
	// (group, producer, admin, changelog reader) in place of a plain TCP
	// dial: a tunnel, or a proxy that injects faults (internal/testrig/testproxy,
	// onceflow chaos). Default nil: TCP.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// dialTLS opens a connection with Client.Dial and, with TLS, runs TLS
// over it (for franz-go clients, whose own TLS dial cannot take a dialer).
func (c Client) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := c.Dial(ctx, network, addr)
	if err != nil || c.TLS == nil {
		return conn, err
	}
	cfg := c.TLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// dialer adapts Client.Dial to sarama's proxy dialer.
type dialer struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	timeout time.Duration
}

func (d dialer) Dial(network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	return d.dial(ctx, network, addr)
}

// Validate lists every problem at once.
func (c Client) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("no brokers given"))
	}
	for _, b := range c.Brokers {
		if strings.TrimSpace(b) == "" || !strings.Contains(b, ":") {
			errs = append(errs, fmt.Errorf("broker address %q is not host:port", b))
		}
	}
	if err := c.SASL.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Timeouts are the group and transaction timeouts. They must agree: a
// transaction times out before the session does (so a zombie's open
// transaction is aborted before its partitions could move), a request
// that may wait out a rebalance (JoinGroup) or a pending transactional
// offset commit is given longer than the broker may hold it, and a commit
// gives up well before the transaction times out.
type Timeouts struct {
	Session     time.Duration
	Rebalance   time.Duration
	Transaction time.Duration
	Heartbeat   time.Duration
	// Commit bounds each transactional call that ends an interval (adding
	// the offsets, committing, aborting; at-least-once: the flush and the
	// offset commit). A call that runs out of it has an unknown outcome:
	// the engine drops the producer and creates it again with the same
	// transactional id, which fences the old one and aborts its
	// transaction. Default: half the transaction timeout.
	Commit time.Duration
}

// Defaults for zero Timeouts fields.
const (
	DefaultSessionTimeout     = 10 * time.Second
	DefaultRebalanceTimeout   = 30 * time.Second
	DefaultTransactionTimeout = 8 * time.Second
)

// WithDefaults fills zero fields.
func (t Timeouts) WithDefaults() Timeouts {
	if t.Session == 0 {
		t.Session = DefaultSessionTimeout
	}
	if t.Rebalance == 0 {
		t.Rebalance = DefaultRebalanceTimeout
	}
	if t.Transaction == 0 {
		t.Transaction = min(DefaultTransactionTimeout, t.Session*4/5)
	}
	if t.Heartbeat == 0 {
		t.Heartbeat = t.Session / 5
	}
	if t.Commit == 0 {
		t.Commit = t.Transaction / 2
	}
	return t
}

// Validate checks that the timeouts agree.
func (t Timeouts) Validate() error {
	var errs []error
	if t.Transaction >= t.Session {
		errs = append(errs, fmt.Errorf("transaction timeout %v must be below the session timeout %v", t.Transaction, t.Session))
	}
	if t.Heartbeat*3 > t.Session {
		errs = append(errs, fmt.Errorf("heartbeat interval %v must be at most a third of the session timeout %v", t.Heartbeat, t.Session))
	}
	if t.Session < time.Second {
		errs = append(errs, fmt.Errorf("session timeout %v is below 1s", t.Session))
	}
	if t.Rebalance < t.Session {
		errs = append(errs, fmt.Errorf("rebalance timeout %v is below the session timeout %v", t.Rebalance, t.Session))
	}
	if t.Commit <= 0 || t.Commit >= t.Transaction {
		errs = append(errs, fmt.Errorf("commit timeout %v must be above zero and below the transaction timeout %v", t.Commit, t.Transaction))
	}
	return errors.Join(errs...)
}

// base is the configuration every client of the engine shares.
func base(c Client, t Timeouts) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	cfg.ClientID = c.ClientID
	if cfg.ClientID == "" {
		cfg.ClientID = "onceflow"
	}
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	// A JoinGroup is held by the coordinator until the rebalance completes,
	// up to the rebalance timeout: the read deadline must be longer, or the
	// client gives up, rejoins and prolongs the very rebalance it waits for.
	cfg.Net.ReadTimeout = t.Rebalance + 5*time.Second
	if c.TLS != nil {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = c.TLS
	}
	if c.Dial != nil {
		cfg.Net.Proxy.Enable = true
		cfg.Net.Proxy.Dialer = dialer{dial: c.Dial, timeout: cfg.Net.DialTimeout}
	}
	setSASL(cfg, c.SASL)
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Metadata.Retry.Max = 3
	cfg.Metadata.AllowAutoTopicCreation = false
	return cfg
}

// BrokerAbortCheckInterval is Kafka's default
// transaction.abort.timed.out.transaction.cleanup.interval.ms: how often
// the broker looks for transactions past their timeout and aborts them. A
// transaction left open by a crash stays open up to the transaction
// timeout plus this interval.
const BrokerAbortCheckInterval = 10 * time.Second

// stableOffsetBudget is how long an offset fetch answered
// UNSTABLE_OFFSET_COMMIT (a previous owner's transaction is still open)
// may be retried: the worst case it waits for, a transaction left open by
// a crash, is aborted by the broker after the transaction timeout plus its
// abort check interval; a few seconds more for the markers.
func stableOffsetBudget(t Timeouts) time.Duration {
	return t.Transaction + BrokerAbortCheckInterval + 5*time.Second
}

// consumerConfig is the sarama configuration of the group consumer.
func consumerConfig(c Client, t Timeouts, instanceID string) *sarama.Config {
	cfg := base(c, t)
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Offsets are committed in the transaction (exactly-once) or by the
	// engine after every output is acknowledged (at-least-once); never by
	// a timer.
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	// sarama retries an offset fetch answered UNSTABLE_OFFSET_COMMIT only
	// Metadata.Retry.Max × Backoff: give it the whole stable-offset
	// budget, or the session fails and the group rejoins in a loop until
	// the transaction clears.
	cfg.Metadata.Retry.Max = int((stableOffsetBudget(t) + cfg.Metadata.Retry.Backoff - 1) / cfg.Metadata.Retry.Backoff)
	cfg.Consumer.Group.InstanceId = instanceID
	cfg.Consumer.Group.Session.Timeout = t.Session
	cfg.Consumer.Group.Heartbeat.Interval = t.Heartbeat
	cfg.Consumer.Group.Rebalance.Timeout = t.Rebalance
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategySticky()}
	cfg.Consumer.Group.ResetInvalidOffsets = true
	cfg.Consumer.Fetch.Default = 4 << 20
	cfg.Consumer.MaxProcessingTime = time.Second
	cfg.ChannelBufferSize = 1024
	return cfg
}

// producerConfig is the sarama configuration of the output producer.
// maxMessageBytes bounds one record and one partition's batch (0: 1 MiB).
func producerConfig(c Client, t Timeouts, transactionalID string, maxMessageBytes int) *sarama.Config {
	cfg := base(c, t)
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 5
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = sarama.CompressionNone
	cfg.Producer.MaxMessageBytes = 1 << 20
	if maxMessageBytes > 0 {
		cfg.Producer.MaxMessageBytes = maxMessageBytes
	}
	cfg.Net.MaxOpenRequests = 1
	cfg.ChannelBufferSize = 4096
	// No request of the producer may outlast a commit's deadline: a
	// request to a broker that does not answer fails after ReadTimeout,
	// and a produce request waits at most Producer.Timeout for its
	// replicas. (The engine also gives up on a call at the deadline, and
	// then closes the producer, which fails whatever sarama still retries.)
	cfg.Net.ReadTimeout = t.Commit
	cfg.Net.WriteTimeout = min(cfg.Net.WriteTimeout, t.Commit)
	cfg.Net.DialTimeout = min(cfg.Net.DialTimeout, t.Commit)
	cfg.Producer.Timeout = t.Commit * 3 / 4
	cfg.Metadata.Retry.Max = max(3, int(t.Commit/cfg.Metadata.Retry.Backoff))
	if transactionalID != "" {
		cfg.Producer.Transaction.ID = transactionalID
		cfg.Producer.Transaction.Timeout = t.Transaction
		cfg.Producer.Transaction.Retry.Max = 50
		cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
		cfg.Producer.Transaction.Retry.BackoffFunc = txnRetryBackoff
		cfg.Producer.Flush.Frequency = transactionalLinger
	} else {
		cfg.Producer.Return.Successes = true
	}
	return cfg
}

// transactionalLinger is how long a transactional producer gathers
// records before it sends them (Kafka's linger.ms; Kafka Streams sets
// 100 ms). Without it sarama sends as soon as the previous request is
// answered, which on a nearby broker is a request per few records per
// partition: the orders topology writes its output and four changelogs,
// and the broker spent more CPU per event on those small requests than on
// anything else it did for the replica. A transaction's records are read
// by no read_committed consumer before its commit, so gathering costs them
// nothing but the commit's wait for the last gathered records: at most
// this long. Measured on real Kafka, orders exactly-once, 300,000 events,
// back to back: the broker's CPU per million events fell from 8.6 to 4.8
// and 3.2 s (10 ms: 3.9; Kafka Streams: 7.2), the replica's own from 25.4
// to 25.0 and 23.2 s, the p99 at 2,000 events/s stayed at 116 to 119 ms
// and the median commit went from 3.3 to 5.6 to 6.5 ms. Copy, whose
// batches are large anyway, did not change beyond the noise. At-least-once
// producers do not gather: their records are visible when written.
const transactionalLinger = 5 * time.Millisecond

// txnRetryBackoff is the wait before the n-th retry of a transactional
// request: 2 ms, growing by 2 ms up to 100 ms (2.5 s over the first 50
// retries, as 50 × 50 ms did before). The first retries matter most: a
// transaction begun right after a commit meets the previous one still
// writing its markers, and its first AddPartitionsToTxn is answered
// CONCURRENT_TRANSACTIONS. sarama's own wait there is 20 ms, which holds
// every transaction's first produce that long: a fifth of a 100 ms
// interval, and longer than a 10 ms one. Growing linearly rather than
// doubling keeps the overshoot small when the markers take tens of ms.
func txnRetryBackoff(retries, _ int) time.Duration {
	return min(2*time.Millisecond*time.Duration(retries+1), 100*time.Millisecond)
}
