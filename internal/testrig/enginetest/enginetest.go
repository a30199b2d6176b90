// Package enginetest runs replicas against a broker for end-to-end tests:
// it starts the embedded broker (or uses ONCEFLOW_KAFKA_BROKERS), writes
// input, starts and stops replicas, and reads everything back
// read_committed to count what was lost or doubled.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// Env is one broker and the clients a test uses on it.
type Env struct {
	T       testing.TB
	Brokers []string
	Broker  *embedded.Broker // nil against a real broker
	Real    bool
	cl      *kgo.Client
	adm     *kadm.Client
	prefix  string
}

// New starts an embedded broker, or uses ONCEFLOW_KAFKA_BROKERS when set.
// Topic and group names get a per-test prefix so tests can share a broker.
func New(t testing.TB) *Env {
	t.Helper()
	e := &Env{T: t, prefix: fmt.Sprintf("%s-%d-", sanitize(t.Name()), time.Now().UnixNano()%1e6)}
	if addrs := os.Getenv("ONCEFLOW_KAFKA_BROKERS"); addrs != "" {
		e.Brokers = strings.Split(addrs, ",")
		e.Real = true
	} else {
		b, err := embedded.Start(embedded.Config{})
		if err != nil {
			t.Fatalf("start embedded broker: %v", err)
		}
		t.Cleanup(b.Close)
		e.Broker = b
		e.Brokers = b.Addrs()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.Brokers...), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(cl.Close)
	e.cl = cl
	e.adm = kadm.NewClient(cl)
	return e
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

// Name prefixes name with the test's unique prefix.
func (e *Env) Name(name string) string { return e.prefix + name }

// CreateTopic creates topic with n partitions.
func (e *Env) CreateTopic(topic string, n int32) {
	e.T.Helper()
	e.CreateTopicConfigs(topic, n, nil)
}

// CreateTopicConfigs creates topic with n partitions and the topic
// configs given (e.g. max.message.bytes). Its replication factor is the
// broker's default (on a cluster of scripts/kafka.sh, every broker holds a
// replica, so a topic stays available while one broker is down).
func (e *Env) CreateTopicConfigs(topic string, n int32, configs map[string]*string) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := e.adm.CreateTopic(ctx, n, -1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		e.T.Fatalf("create topic %s: %v", topic, err)
	}
	// A real broker answers CreateTopics before every broker's metadata
	// shows the topic: wait until it does.
	for {
		md, err := e.adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(n) {
				return
			}
		}
		if ctx.Err() != nil {
			e.T.Fatalf("topic %s not in metadata after creation", topic)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Produce writes n records with keys key-0..key-49 and unique values
// v-<from+i>, headers event-id and version.
func (e *Env) Produce(topic string, from, n int) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{
			Topic: topic,
			Key:   fmt.Appendf(nil, "key-%d", i%50),
			Value: fmt.Appendf(nil, "v-%d", i),
			Headers: []kgo.RecordHeader{
				{Key: "event-id", Value: fmt.Appendf(nil, "e-%d", i)},
				{Key: "version", Value: fmt.Appendf(nil, "%d", i/50)},
			},
		})
	}
	if err := e.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		e.T.Fatalf("produce: %v", err)
	}
}

// ProduceRecords writes records as given, in order.
func (e *Env) ProduceRecords(rs ...*kgo.Record) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := e.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		e.T.Fatalf("produce: %v", err)
	}
}

// ProduceLarge writes records as given, in order, with a client that
// accepts records up to 64 MiB (the topic must accept them too).
func (e *Env) ProduceLarge(rs ...*kgo.Record) {
	e.T.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.Brokers...), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(64<<20), kgo.BrokerMaxWriteBytes(128<<20))
	if err != nil {
		e.T.Fatalf("client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		e.T.Fatalf("produce: %v", err)
	}
}

// GrowTopic raises topic's partition count to n.
func (e *Env) GrowTopic(topic string, n int) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := e.adm.UpdatePartitions(ctx, n, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		e.T.Fatalf("grow %s to %d partitions: %v", topic, n, err)
	}
	for {
		md, err := e.adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && len(td.Partitions) == n {
				return
			}
		}
		if ctx.Err() != nil {
			e.T.Fatalf("topic %s does not show %d partitions", topic, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Partitions returns topic's partition count (0 when it does not exist).
func (e *Env) Partitions(topic string) int {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := e.adm.Metadata(ctx, topic)
	if err != nil {
		e.T.Fatalf("metadata of %s: %v", topic, err)
	}
	return len(md.Topics[topic].Partitions)
}

// DeleteRecords moves the log start of topic's partitions to the offsets
// given.
func (e *Env) DeleteRecords(topic string, before map[int32]int64) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	os := kadm.Offsets{}
	for p, o := range before {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: o})
	}
	resp, err := e.adm.DeleteRecords(ctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		e.T.Fatalf("delete records of %s: %v", topic, err)
	}
}

// ProduceRaw writes one record as given.
func (e *Env) ProduceRaw(topic string, key, value []byte) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: key, Value: value}).FirstErr(); err != nil {
		e.T.Fatalf("produce: %v", err)
	}
}

// Read returns the committed records of topic.
func (e *Env) Read(topic string) []verify.Record {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := verify.ReadAll(ctx, e.Brokers, topic)
	if err != nil {
		e.T.Fatalf("read %s: %v", topic, err)
	}
	return rs
}

// WaitCount waits until topic holds at least n committed records.
func (e *Env) WaitCount(topic string, n int, within time.Duration) {
	e.T.Helper()
	deadline := time.Now().Add(within)
	var got int
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rs, err := verify.ReadAll(ctx, e.Brokers, topic)
		cancel()
		if err == nil {
			got = len(rs)
			if got >= n {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.T.Fatalf("topic %s: %d committed records after %v, want %d", topic, got, within, n)
}

// Verify matches output to input by lineage and fails the test unless
// every input has exactly one output.
func (e *Env) Verify(input, output string) verify.Report {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := verify.Lineage(ctx, e.Brokers, input, output)
	if err != nil {
		e.T.Fatalf("verify: %v", err)
	}
	e.T.Logf("verify %s -> %s: %s", input, output, r)
	if !r.OK {
		e.T.Errorf("exactly-once violated: %s", r)
	}
	return r
}

// VerifySources checks that every input record has exactly one record in
// the outputs (together), by lineage, whatever the values.
func (e *Env) VerifySources(input string, outputs ...string) verify.Report {
	e.T.Helper()
	var out []verify.Record
	for _, o := range outputs {
		out = append(out, e.Read(o)...)
	}
	r := verify.MatchSources(input, e.Read(input), out)
	e.T.Logf("verify %s -> %v: %s", input, outputs, r)
	if !r.OK {
		e.T.Errorf("exactly-once violated: %s", r)
	}
	return r
}

// Members returns the instance ids of the group's current members.
func (e *Env) Members(group string) []string {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := e.adm.DescribeGroups(ctx, group)
	if err != nil {
		e.T.Fatalf("describe group %s: %v", group, err)
	}
	var ids []string
	for _, m := range described[group].Members {
		if m.InstanceID != nil {
			ids = append(ids, *m.InstanceID)
		} else {
			ids = append(ids, m.MemberID)
		}
	}
	return ids
}

// CommittedOffsets returns the group's committed offsets for topic.
func (e *Env) CommittedOffsets(group, topic string) map[int32]int64 {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := e.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}
	}
	if err != nil {
		e.T.Fatalf("fetch offsets: %v", err)
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		out[p] = o.At
	}
	return out
}

// EndOffsets returns the end offsets of topic.
func (e *Env) EndOffsets(topic string) map[int32]int64 {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		e.T.Fatalf("end offsets: %v", err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// StartOffsets returns the log start offsets of topic.
func (e *Env) StartOffsets(topic string) map[int32]int64 {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := e.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		e.T.Fatalf("start offsets: %v", err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// TopicConfig returns the value in force of one config of topic.
func (e *Env) TopicConfig(topic, name string) string {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcs, err := e.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		e.T.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		e.T.Fatalf("describe configs of %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	e.T.Fatalf("topic %s has no config %s", topic, name)
	return ""
}

// SetTopicConfig sets one config of topic.
func (e *Env) SetTopicConfig(topic, name, value string) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := e.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: &value}}, topic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		e.T.Fatalf("set %s=%s on %s: %v", name, value, topic, err)
	}
}

// Replica is an engine running in a goroutine.
type Replica struct {
	E      *engine.Engine
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Config returns an engine configuration for app and instance suited to
// tests: a short rebalance timeout (a stalled member is evicted in 6 s) and
// a frequent heartbeat, but a long transaction timeout, so that a loaded
// machine (CI runs the race detector on 2 cores) does not time transactions
// out and push the producer onto its error paths, where sarama itself has a
// data race (see producer_errors_test.go).
func (e *Env) Config(app, instance string) engine.Config {
	return engine.Config{
		Client:         kafka.Client{Brokers: e.Brokers, ClientID: instance},
		Timeouts:       kafka.Timeouts{Session: 30 * time.Second, Rebalance: 6 * time.Second, Transaction: 25 * time.Second, Heartbeat: time.Second}.WithDefaults(),
		AppID:          app,
		InstanceID:     instance,
		ExactlyOnce:    true,
		CommitInterval: 50 * time.Millisecond,
		CommitRecords:  500,
		Logger:         hclog.New(&hclog.LoggerOptions{Name: instance, Level: logLevel(), Output: os.Stderr}),
	}
}

func logLevel() hclog.Level {
	if l := os.Getenv("ONCEFLOW_TEST_LOG"); l != "" {
		return hclog.LevelFromString(l)
	}
	return hclog.Warn
}

// Start runs a replica until Stop or Crash.
func (e *Env) Start(cfg engine.Config, g *graph.Graph) *Replica {
	e.T.Helper()
	eng, err := engine.New(cfg, g)
	if err != nil {
		e.T.Fatalf("engine: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Replica{E: eng, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- eng.Run(ctx) }()
	e.T.Cleanup(func() { r.Stop() })
	return r
}

// Stop shuts the replica down cleanly and returns Run's error.
func (r *Replica) Stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

// Wait waits up to within for Run to return by itself (not stopped) and
// returns its error; ok is false when it is still running.
func (r *Replica) Wait(within time.Duration) (err error, ok bool) {
	select {
	case err := <-r.done:
		r.once.Do(func() {
			r.cancel()
			r.err = err
		})
		return err, true
	case <-time.After(within):
		return nil, false
	}
}

// Crash stops the replica as a kill would: no commit, abort or leave.
func (r *Replica) Crash() {
	r.E.Crash()
	r.Stop()
}

// WaitReady waits until the replica is in a group session.
func (r *Replica) WaitReady(t testing.TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !r.E.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("replica not in a session after %v", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
