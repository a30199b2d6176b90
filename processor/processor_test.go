package processor_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// valid is a configuration with no problems; cases change one thing.
func valid() processor.Config {
	return processor.Config{Brokers: []string{"localhost:9092"}, ApplicationID: "orders-app", InstanceID: "replica-1"}
}

// joined splits a joined error into its parts.
func joined(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, joined(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*processor.Config)
		want   []string // one substring per expected problem, in order
	}{
		{"valid", func(*processor.Config) {}, nil},
		{"valid with every field", func(c *processor.Config) {
			c.Brokers = []string{"a:9092", "b:9092"}
			c.Guarantee = processor.AtLeastOnce
			c.CommitInterval = time.Second
			c.CommitRecords = 500
			c.SessionTimeout = 45 * time.Second
			c.TransactionTimeout = 30 * time.Second
			c.RebalanceTimeout = time.Minute
			c.SASLMechanism = "plain"
			c.SASLUser = "u"
			c.SASLPassword = "p"
		}, nil},
		{"exactly once spelled out", func(c *processor.Config) { c.Guarantee = processor.ExactlyOnce }, nil},
		{"zero config", func(c *processor.Config) { *c = processor.Config{} }, []string{
			"no brokers given",
			"application id is empty",
			"instance id is empty",
		}},
		{"bad guarantee", func(c *processor.Config) { c.Guarantee = "exactly-once" }, []string{
			`guarantee "exactly-once": want "exactly_once" or "at_least_once"`,
		}},
		{"ids with spaces", func(c *processor.Config) {
			c.ApplicationID = "orders app"
			c.InstanceID = " replica-1"
		}, []string{
			`application id "orders app": only letters, digits, '.', '_' and '-'`,
			`instance id " replica-1": only letters, digits, '.', '_' and '-'`,
		}},
		{"ids with other characters", func(c *processor.Config) {
			c.ApplicationID = "orders/app"
			c.InstanceID = "réplica"
		}, []string{`application id "orders/app"`, `instance id "réplica"`}},
		{"bad broker addresses", func(c *processor.Config) { c.Brokers = []string{"localhost", " "} }, []string{
			`broker address "localhost" is not host:port`,
			`broker address " " is not host:port`,
		}},
		{"transaction timeout equal to session timeout", func(c *processor.Config) {
			c.SessionTimeout = 10 * time.Second
			c.TransactionTimeout = 10 * time.Second
		}, []string{"transaction timeout 10s must be below the session timeout 10s"}},
		{"transaction timeout above the default session timeout", func(c *processor.Config) {
			c.TransactionTimeout = 12 * time.Second
		}, []string{"transaction timeout 12s must be below the session timeout 10s"}},
		{"short session timeout gets a shorter default transaction timeout", func(c *processor.Config) {
			c.SessionTimeout = 5 * time.Second
		}, nil},
		{"session timeout below 1s", func(c *processor.Config) {
			c.SessionTimeout = 500 * time.Millisecond
		}, []string{"session timeout 500ms is below 1s"}},
		{"rebalance timeout below session timeout", func(c *processor.Config) {
			c.SessionTimeout = 20 * time.Second
			c.RebalanceTimeout = 15 * time.Second
		}, []string{"rebalance timeout 15s is below the session timeout 20s"}},
		{"commit interval equal to transaction timeout", func(c *processor.Config) {
			c.CommitInterval = 8 * time.Second
		}, []string{"commit interval 8s must be below the transaction timeout 8s"}},
		{"commit interval above a derived transaction timeout", func(c *processor.Config) {
			c.SessionTimeout = 5 * time.Second
			c.CommitInterval = 4 * time.Second
		}, []string{"commit interval 4s must be below the transaction timeout 4s"}},
		{"default commit interval above a short transaction timeout", func(c *processor.Config) {
			c.TransactionTimeout = 50 * time.Millisecond
		}, []string{"commit interval 100ms must be below the transaction timeout 50ms"}},
		{"commit interval below 1ms", func(c *processor.Config) {
			c.CommitInterval = 500 * time.Microsecond
		}, []string{"commit interval 500µs: want at least 1ms"}},
		{"negative values", func(c *processor.Config) {
			c.CommitInterval = -time.Second
			c.CommitRecords = -1
			c.StateCleanupDelay = -time.Minute
		}, []string{"commit interval -1s: want at least 1ms", "commit records -1 is negative", "state cleanup delay -1m0s is negative"}},
		{"SASL mechanism unsupported", func(c *processor.Config) {
			c.SASLMechanism = "OAUTHBEARER"
			c.SASLUser = "u"
			c.SASLPassword = "p"
		}, []string{`SASL mechanism "OAUTHBEARER" is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 are)`}},
		{"SASL SCRAM-SHA-256", func(c *processor.Config) {
			c.SASLMechanism = "scram-sha-256"
			c.SASLUser = "u"
			c.SASLPassword = "p"
		}, nil},
		{"SASL SCRAM-SHA-512", func(c *processor.Config) {
			c.SASLMechanism = "SCRAM-SHA-512"
			c.SASLUser = "u"
			c.SASLPassword = "p"
		}, nil},
		{"SASL PLAIN without a user", func(c *processor.Config) { c.SASLMechanism = "PLAIN" }, []string{
			"SASL PLAIN needs a user", "SASL PLAIN needs a password",
		}},
		{"SASL SCRAM without a password", func(c *processor.Config) {
			c.SASLMechanism = "SCRAM-SHA-512"
			c.SASLUser = "u"
		}, []string{"SASL SCRAM-SHA-512 needs a password"}},
		{"many problems at once", func(c *processor.Config) {
			*c = processor.Config{
				Brokers:            []string{"nohost"},
				ApplicationID:      "a b",
				Guarantee:          "maybe",
				TransactionTimeout: 20 * time.Second,
				SASLMechanism:      "GSSAPI",
			}
		}, []string{
			`broker address "nohost"`,
			`SASL mechanism "GSSAPI"`,
			`application id "a b"`,
			"instance id is empty",
			`guarantee "maybe"`,
			"transaction timeout 20s must be below the session timeout 10s",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c)
			err := c.Validate()
			got := joined(err)
			if len(got) != len(tc.want) {
				t.Fatalf("Validate() gave %d problems, want %d:\n%v", len(got), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// A negative timeout also upsets the checks that compare timeouts, so only
// the presence of the problems that name it is checked here.
func TestConfigValidateNegativeTimeouts(t *testing.T) {
	for _, tc := range []struct {
		change func(*processor.Config)
		want   []string
	}{
		{func(c *processor.Config) { c.SessionTimeout = -time.Second; c.RebalanceTimeout = -2 * time.Second },
			[]string{"session timeout -1s is negative", "rebalance timeout -2s is negative", "session timeout -1s is below 1s"}},
		{func(c *processor.Config) { c.TransactionTimeout = -time.Second },
			[]string{"transaction timeout -1s is negative"}},
	} {
		c := valid()
		tc.change(&c)
		err := c.Validate()
		if err == nil {
			t.Fatalf("Validate(%+v): want an error", c)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q does not contain %q", err, w)
			}
		}
	}
}

func copyTopology() *topology.Topology {
	t := topology.New("copy")
	in := topology.Source(t, "in", serde.Bytes(), serde.Bytes())
	topology.To(in, "out", serde.Bytes(), serde.Bytes())
	return t
}

func TestNewReportsEverything(t *testing.T) {
	bad := topology.New("bad")
	topology.Source(bad, "in", serde.Bytes(), serde.Bytes())
	for _, tc := range []struct {
		name string
		cfg  processor.Config
		topo *topology.Topology
		want []string
	}{
		{"nil topology and bad config", processor.Config{}, nil, []string{
			"processor: config: no brokers given",
			"processor: config: ",
			"processor: topology is nil",
		}},
		{"invalid topology", valid(), bad, []string{
			`processor: topology: source "in" is not used`,
		}},
		{"invalid topology and bad config", processor.Config{Brokers: []string{"b:1"}, InstanceID: "i"}, bad, []string{
			"processor: config: application id is empty",
			`processor: topology: source "in" is not used`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := processor.New(tc.cfg, tc.topo)
			if err == nil {
				t.Fatal("New: want an error")
			}
			if p != nil {
				t.Error("New returned a processor with an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// The config problems stay individually visible through the wrapping.
	_, err := processor.New(processor.Config{}, nil)
	msg := err.Error()
	for _, w := range []string{"no brokers given", "application id is empty", "instance id is empty", "topology is nil"} {
		if strings.Count(msg, w) != 1 {
			t.Errorf("%q: want %q exactly once", msg, w)
		}
	}
}

// New does no I/O: with a listener as the only broker, New succeeds and
// nothing connects to it.
func TestNewDoesNoIO(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()

	cfg := valid()
	cfg.Brokers = []string{ln.Addr().String()}
	cfg.Registerer = prometheus.NewRegistry()
	p, err := processor.New(cfg, copyTopology())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got := p.RejectedTopic(); got != "orders-app-rejected" {
		t.Errorf("RejectedTopic() = %q", got)
	}
	if s := p.Stats(); s != (processor.Stats{}) {
		t.Errorf("Stats() before Run = %+v, want zero", s)
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("New connected to the broker")
	case <-time.After(200 * time.Millisecond):
	}
}

func TestNewUnreachableBroker(t *testing.T) {
	cfg := valid()
	cfg.Brokers = []string{"127.0.0.1:1"}
	start := time.Now()
	p, err := processor.New(cfg, copyTopology())
	if err != nil {
		t.Fatalf("New with an unreachable broker: %v", err)
	}
	if p == nil {
		t.Fatal("New returned neither a processor nor an error")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("New took %v: it must not dial", d)
	}
}

// Two replicas registering into one Registerer with the same labels is a
// configuration mistake: New reports it, it does not panic.
func TestNewDuplicateMetrics(t *testing.T) {
	cfg := valid()
	cfg.Registerer = prometheus.NewRegistry()
	if _, err := processor.New(cfg, copyTopology()); err != nil {
		t.Fatalf("first New: %v", err)
	}
	_, err := processor.New(cfg, copyTopology())
	if err == nil {
		t.Fatal("second New with the same Registerer and labels: want an error")
	}
	if !strings.HasPrefix(err.Error(), "processor: ") {
		t.Errorf("error %q: want prefix \"processor: \"", err)
	}
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Errorf("error %v does not unwrap to prometheus.AlreadyRegisteredError", err)
	}
	// Another instance id is another set of series.
	cfg.InstanceID = "replica-2"
	if _, err := processor.New(cfg, copyTopology()); err != nil {
		t.Fatalf("New for a second instance: %v", err)
	}
}
