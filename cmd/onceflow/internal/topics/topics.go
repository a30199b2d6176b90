// Package topics creates, lists and describes Kafka topics for
// `onceflow topics`. It speaks to the cluster with franz-go's admin client,
// like the rest of the tooling (internal/tooling/verify, internal/tooling/gen).
package topics

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
)

// ErrNotFound is wrapped by Describe's error for a topic that does not
// exist. Not retryable.
var ErrNotFound = errors.New("topics: topic does not exist")

// Admin is an admin client on one cluster. Close it after use.
type Admin struct {
	cl  *kgo.Client
	adm *kadm.Client
}

// Connect builds an admin client and checks that a broker answers (within
// clientcfg.ProbeTimeout). extra are client options appended to the
// defaults (TLS, SASL: clientcfg.Security.Options).
func Connect(ctx context.Context, brokers []string, extra ...kgo.Opt) (*Admin, error) {
	if len(brokers) == 0 {
		return nil, errors.New("topics: no brokers given")
	}
	// A short metadata age: the client answers metadata requests from a
	// cache (5 s by default), which would list a deleted topic as long.
	opts := append(clientcfg.Options(brokers, "onceflow-topics", nil), kgo.MetadataMinAge(50*time.Millisecond))
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("topics: client: %w", err)
	}
	if err := clientcfg.Probe(ctx, cl, brokers); err != nil {
		cl.Close()
		return nil, fmt.Errorf("topics: %w", err)
	}
	return &Admin{cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close closes the client.
func (a *Admin) Close() { a.cl.Close() }

// Spec is a topic to create.
type Spec struct {
	Name        string
	Partitions  int32             // at least 1
	Replication int16             // -1: the broker's default.replication.factor
	Configs     map[string]string // topic configs, e.g. cleanup.policy=compact
}

// Create creates the topic. A topic that exists is an error wrapping
// kerr.TopicAlreadyExists; so is any refusal of the broker (an unknown
// config, more replicas than brokers).
func (a *Admin) Create(ctx context.Context, s Spec) error {
	if s.Partitions < 1 {
		return fmt.Errorf("topics: create %q: %d partitions: want at least 1", s.Name, s.Partitions)
	}
	if s.Replication == 0 || s.Replication < -1 {
		return fmt.Errorf("topics: create %q: replication factor %d: want at least 1 (or -1: the broker's default)", s.Name, s.Replication)
	}
	var configs map[string]*string
	for k, v := range s.Configs {
		if configs == nil {
			configs = map[string]*string{}
		}
		configs[k] = &v
	}
	if _, err := a.adm.CreateTopic(ctx, s.Partitions, s.Replication, configs, s.Name); err != nil {
		return fmt.Errorf("topics: create %q: %w", s.Name, err)
	}
	a.awaitVisible(ctx, s.Name, int(s.Partitions), visibleBound)
	return nil
}

// visibleBound is how long Create waits for a topic it created to show in
// metadata with a leader for every partition.
const visibleBound = 10 * time.Second

// awaitVisible waits, at most bound, until metadata lists topic with n
// partitions that all have a leader. The controller answers a create once
// the topic is decided; a broker's metadata (and so the next command's
// read of the topic) may lag it by a moment, in which the topic looks
// absent. A topic still not visible after bound was created all the same:
// awaitVisible only returns.
func (a *Admin) awaitVisible(ctx context.Context, topic string, n int, bound time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		tds, err := a.adm.ListTopics(ctx, topic)
		if err == nil {
			if td, ok := tds[topic]; ok && td.Err == nil && len(td.Partitions) == n && leaders(td) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaders reports whether every partition of td has a leader.
func leaders(td kadm.TopicDetail) bool {
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

// Topic is one line of List.
type Topic struct {
	Name        string `json:"name"`
	Partitions  int    `json:"partitions"`
	Replication int    `json:"replication"`
	// Internal says whose internal topic it is: "kafka" (the broker's
	// own, such as __consumer_offsets); an onceflow application's, by
	// name: "repartition", "changelog", "rejected", "outbox" (an external
	// sink's, "<app>-sink-<name>", when its dead-letter or ledger topic
	// exists beside it), "dead-letter" or "ledger"; or "" for a topic of
	// the user's.
	Internal string `json:"internal,omitempty"`
}

// List returns every topic, sorted by name.
func (a *Admin) List(ctx context.Context) ([]Topic, error) {
	tds, err := a.adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, fmt.Errorf("topics: list: %w", err)
	}
	var out []Topic
	for _, name := range slices.Sorted(maps.Keys(tds)) {
		td := tds[name]
		if td.Err != nil {
			return nil, fmt.Errorf("topics: list: %s: %w", name, td.Err)
		}
		out = append(out, Topic{Name: name, Partitions: len(td.Partitions), Replication: td.Partitions.NumReplicas(), Internal: internalKind(td, tds)})
	}
	return out, nil
}

// internalKind classifies a topic as the broker's, an onceflow
// application's (by the names the runtime gives them), or the user's. An
// outbox's name has no suffix of its own: it is one when its dead-letter
// or ledger topic (which the sink runner creates) is among all.
func internalKind(td kadm.TopicDetail, all kadm.TopicDetails) string {
	name := td.Topic
	sink := strings.Contains(name, "-sink-")
	switch {
	case td.IsInternal || strings.HasPrefix(name, "__"):
		return "kafka"
	case strings.HasSuffix(name, "-repartition"):
		return "repartition"
	case sink && strings.HasSuffix(name, "-ledger-changelog"):
		return "ledger"
	case strings.HasSuffix(name, "-changelog"):
		return "changelog"
	case strings.HasSuffix(name, "-rejected"):
		return "rejected"
	case sink && strings.HasSuffix(name, "-dlq"):
		return "dead-letter"
	case sink && (all.Has(name+"-dlq") || all.Has(name+"-ledger-changelog")):
		return "outbox"
	}
	return ""
}

// Description is one topic in detail.
type Description struct {
	Topic
	PartitionDetails []Partition `json:"partition_details"`
	// Configs are the topic's configs whose value does not come from
	// Kafka's defaults: set on the topic, or by the broker's settings.
	Configs []Config `json:"configs"`
}

// Partition is one partition of a Description.
type Partition struct {
	ID       int32   `json:"id"`
	Leader   int32   `json:"leader"`
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
	Start    int64   `json:"start_offset"` // log start offset
	End      int64   `json:"end_offset"`   // high watermark
}

// Config is one non-default config of a Description.
type Config struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"` // topic, broker, broker-default, ...
}

// Describe returns the topic's partitions (leaders, replicas, offsets)
// and its configs that differ from Kafka's defaults.
func (a *Admin) Describe(ctx context.Context, name string) (Description, error) {
	d := Description{Topic: Topic{Name: name}}
	tds, err := a.adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return d, fmt.Errorf("topics: describe %q: %w", name, err)
	}
	td, ok := tds[name]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return d, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if td.Err != nil {
		return d, fmt.Errorf("topics: describe %q: %w", name, td.Err)
	}
	d.Partitions, d.Replication, d.Internal = len(td.Partitions), td.Partitions.NumReplicas(), internalKind(td, tds)
	starts, err := a.adm.ListStartOffsets(ctx, name)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return d, fmt.Errorf("topics: describe %q: start offsets: %w", name, err)
	}
	ends, err := a.adm.ListEndOffsets(ctx, name)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return d, fmt.Errorf("topics: describe %q: end offsets: %w", name, err)
	}
	for _, p := range td.Partitions.Sorted() {
		s, _ := starts.Lookup(name, p.Partition)
		e, _ := ends.Lookup(name, p.Partition)
		d.PartitionDetails = append(d.PartitionDetails, Partition{ID: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR, Start: s.Offset, End: e.Offset})
	}
	if d.Configs, err = a.configs(ctx, name); err != nil {
		return d, err
	}
	return d, nil
}

// configs returns the topic's configs that do not come from Kafka's
// defaults, sorted by name.
func (a *Admin) configs(ctx context.Context, name string) ([]Config, error) {
	rcs, err := a.adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("topics: describe %q: configs: %w", name, err)
	}
	rc, err := rcs.On(name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return nil, fmt.Errorf("topics: describe %q: configs: %w", name, err)
	}
	var out []Config
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDefaultConfig || c.Source == kmsg.ConfigSourceUnknown {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		out = append(out, Config{Name: c.Key, Value: v, Source: sourceName(c.Source)})
	}
	slices.SortFunc(out, func(x, y Config) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

func sourceName(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "broker"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "broker-default"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "broker-static"
	}
	return strings.ToLower(s.String())
}
