package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// ErrUnreachable means no broker answered. Retryable later.
var ErrUnreachable = errors.New("kafka: brokers unreachable")

// ErrTopicMissing means a topic the application reads does not exist.
var ErrTopicMissing = errors.New("kafka: topic does not exist")

// Admin inspects and prepares topics.
type Admin struct {
	client sarama.Client
	admin  sarama.ClusterAdmin
}

// Connect reaches the cluster or fails within a bounded time (about 15 s
// when nothing answers), with ErrUnreachable; or, at once, with ErrRefused
// when the brokers refuse the credentials or the certificate.
func Connect(ctx context.Context, c Client) (*Admin, error) {
	cfg := base(c, Timeouts{}.WithDefaults())
	cfg.Metadata.Retry.Max = 2
	cfg.Metadata.Retry.Backoff = 500 * time.Millisecond
	cfg.Net.ReadTimeout = 10 * time.Second
	type result struct {
		client sarama.Client
		err    error
	}
	done := make(chan result, 1)
	go func() {
		cl, err := sarama.NewClient(c.Brokers, cfg)
		done <- result{cl, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		go func() {
			if r := <-done; r.client != nil {
				r.client.Close()
			}
		}()
		return nil, ctx.Err()
	}
	if r.err != nil {
		if IsRefused(r.err) {
			return nil, Refused(fmt.Sprintf("connecting to %v", c.Brokers), r.err)
		}
		return nil, fmt.Errorf("%w: %v: %v", ErrUnreachable, c.Brokers, r.err)
	}
	admin, err := sarama.NewClusterAdminFromClient(r.client)
	if err != nil {
		r.client.Close()
		return nil, fmt.Errorf("kafka: admin client: %w", err)
	}
	return &Admin{client: r.client, admin: admin}, nil
}

// Close releases the connections.
func (a *Admin) Close() error { return a.admin.Close() }

// Partitions returns the partition count of each topic; missing topics are
// absent from the map.
func (a *Admin) Partitions(topics ...string) (map[string]int32, error) {
	if err := a.client.RefreshMetadata(); err != nil {
		return nil, fmt.Errorf("kafka: metadata: %w", err)
	}
	have, err := a.client.Topics()
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics: %w", err)
	}
	out := map[string]int32{}
	for _, t := range topics {
		if !slices.Contains(have, t) {
			continue
		}
		ps, err := a.client.Partitions(t)
		if err != nil {
			return nil, fmt.Errorf("kafka: partitions of %q: %w", t, err)
		}
		out[t] = int32(len(ps))
	}
	return out, nil
}

// TopicIDs returns the topic id of each topic that exists, in hex ("" when
// the broker gives topics no id): a topic deleted and created again under
// its name has another.
func (a *Admin) TopicIDs(topics ...string) (map[string]string, error) {
	ms, err := a.admin.DescribeTopics(topics)
	if err != nil {
		return nil, fmt.Errorf("kafka: describe topics: %w", err)
	}
	out := map[string]string{}
	for _, m := range ms {
		if m.Err != sarama.ErrNoError {
			continue
		}
		if m.Uuid == (sarama.Uuid{}) {
			out[m.Name] = ""
			continue
		}
		out[m.Name] = m.Uuid.String()
	}
	return out, nil
}

// Ensure creates each missing topic with the partition count given. An
// existing topic is left as it is; its actual count is returned.
func (a *Admin) Ensure(want map[string]int32, configs map[string]*string) (map[string]int32, error) {
	have, err := a.Partitions(slices.Sorted(maps.Keys(want))...)
	if err != nil {
		return nil, err
	}
	for _, t := range slices.Sorted(maps.Keys(want)) {
		if _, ok := have[t]; ok {
			continue
		}
		err := a.admin.CreateTopic(t, &sarama.TopicDetail{NumPartitions: want[t], ReplicationFactor: -1, ConfigEntries: configs}, false)
		switch {
		case errors.Is(err, sarama.ErrTopicAlreadyExists) && a.hidden(t, hiddenBound):
			// It exists, and metadata still does not show it: the
			// cluster's ACLs hide it from this principal.
			return nil, Refused(fmt.Sprintf("topic %q exists but is hidden from this principal (it needs WRITE, or READ for a topic it reads)", t), err)
		case IsRefused(err):
			return nil, Refused(fmt.Sprintf("create topic %q (it needs CREATE on it to create it, "+
				"and WRITE, or READ for a topic it reads, to use it)", t), err)
		case err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists):
			return nil, fmt.Errorf("kafka: create topic %q with %d partitions: %w", t, want[t], err)
		}
	}
	return a.waitPartitions(want)
}

// hiddenBound is how long a topic the cluster says exists may stay out of
// metadata before it is taken for hidden by ACLs. Another replica of the
// application may have created it a moment ago: creation reaches the
// brokers' metadata asynchronously, so "already exists" can come before
// the topic is visible.
const hiddenBound = 10 * time.Second

// hidden reports whether fresh metadata requests leave topic out for
// longer than bound (a topic that exists is left out when the principal
// may not describe it).
func (a *Admin) hidden(topic string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		have, err := a.Partitions(topic)
		if err != nil {
			return false
		}
		if _, ok := have[topic]; ok {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitPartitions waits until metadata shows every topic (creation is
// asynchronous on a real broker).
func (a *Admin) waitPartitions(want map[string]int32) (map[string]int32, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		have, err := a.Partitions(slices.Sorted(maps.Keys(want))...)
		if err != nil {
			return nil, err
		}
		if len(have) == len(want) {
			return have, nil
		}
		if time.Now().After(deadline) {
			var missing []string
			for t := range want {
				if _, ok := have[t]; !ok {
					missing = append(missing, t)
				}
			}
			slices.Sort(missing)
			return nil, fmt.Errorf("kafka: topics %v not visible 30s after creation (on a cluster with ACLs: "+
				"this principal needs WRITE on them, or READ, which imply DESCRIBE; see docs/security.md)", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TopicConfig returns the value in force of one config of topic (set on
// the topic or the broker's default). ok is false when the broker does not
// report it.
func (a *Admin) TopicConfig(topic, name string) (value string, ok bool, err error) {
	entries, err := a.describe(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{name}})
	if err != nil {
		return "", false, fmt.Errorf("kafka: describe config %s of %q: %w", name, topic, err)
	}
	for _, e := range entries {
		if e.Name == name {
			return e.Value, true, nil
		}
	}
	return "", false, nil
}

// describe returns the config entries of one resource, or its error. It
// does what sarama's deprecated ClusterAdmin.DescribeConfig does, through
// DescribeConfigs.
func (a *Admin) describe(r sarama.ConfigResource) ([]sarama.ConfigEntry, error) {
	results, err := a.admin.DescribeConfigs([]*sarama.ConfigResource{&r}, sarama.DescribeConfigsOptions{})
	if err != nil {
		return nil, err
	}
	var entries []sarama.ConfigEntry
	for _, res := range results {
		if res.Name != r.Name {
			continue
		}
		if res.ErrorCode != sarama.ErrNoError {
			return nil, &sarama.DescribeConfigError{Err: res.ErrorCode, ErrMsg: res.ErrorMsg}
		}
		entries = append(entries, res.Configs...)
	}
	return entries, nil
}

// SetTopicConfig sets one config of topic, leaving its others as they are.
func (a *Admin) SetTopicConfig(topic, name, value string) error {
	entries := map[string]sarama.IncrementalAlterConfigsEntry{name: {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &value}}
	if err := a.admin.IncrementalAlterConfig(sarama.TopicResource, topic, entries, false); err != nil {
		return fmt.Errorf("kafka: set %s=%s on %q: %w", name, value, topic, err)
	}
	return nil
}

// DeleteRecords deletes the records of topic's partitions below the
// offsets given: their log start moves there.
func (a *Admin) DeleteRecords(topic string, before map[int32]int64) error {
	if err := a.admin.DeleteRecords(topic, before); err != nil {
		return fmt.Errorf("kafka: delete records of %q: %w", topic, err)
	}
	return nil
}

// ErrInternalOffsetOutOfRange means a consumer group's committed offset
// on an internal topic is outside the records the topic holds: records it
// had not read yet were deleted (or the topic was recreated). Not
// retryable: resuming anywhere else would skip or repeat records.
var ErrInternalOffsetOutOfRange = errors.New("kafka: committed offset of an internal topic is out of range")

// CheckCommitted returns ErrInternalOffsetOutOfRange, naming every such
// partition, when group's committed offset of one of the partitions given
// lies below the partition's log start or above its end. Partitions
// without a committed offset are fine.
func (a *Admin) CheckCommitted(group string, partitions map[string][]int32) error {
	if len(partitions) == 0 {
		return nil
	}
	resp, err := a.admin.ListConsumerGroupOffsets(group, partitions)
	if err != nil {
		return fmt.Errorf("kafka: committed offsets of %q: %w", group, err)
	}
	var bad []error
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		for _, p := range partitions[topic] {
			b := resp.GetBlock(topic, p)
			if b == nil || b.Offset < 0 {
				continue
			}
			if b.Err != sarama.ErrNoError {
				return fmt.Errorf("kafka: committed offset of %q on %s/%d: %w", group, topic, p, b.Err)
			}
			start, err := a.client.GetOffset(topic, p, sarama.OffsetOldest)
			if err != nil {
				return fmt.Errorf("kafka: log start of %s/%d: %w", topic, p, err)
			}
			end, err := a.client.GetOffset(topic, p, sarama.OffsetNewest)
			if err != nil {
				return fmt.Errorf("kafka: end offset of %s/%d: %w", topic, p, err)
			}
			if b.Offset < start || b.Offset > end {
				bad = append(bad, fmt.Errorf("%s/%d: committed offset %d, the partition holds [%d, %d)", topic, p, b.Offset, start, end))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %w", ErrInternalOffsetOutOfRange, errors.Join(bad...))
	}
	return nil
}

// CheckGroup looks up group's coordinator, so that a principal the cluster
// does not authorize for the group learns it at once: the group client
// retries that refusal for its whole metadata budget, which with the
// stable-offset budget is minutes. Only a refusal (ErrRefused) is returned;
// any other answer (a coordinator not available yet) is left to the group
// client.
func (a *Admin) CheckGroup(group string) error {
	_, err := a.client.Coordinator(group)
	if IsRefused(err) {
		return Refused(fmt.Sprintf("group %q (it needs READ on the group)", group), err)
	}
	return nil
}
