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
// when nothing answers), with ErrUnreachable.
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
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return nil, fmt.Errorf("kafka: create topic %q with %d partitions: %w", t, want[t], err)
		}
	}
	return a.waitPartitions(want)
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
			return nil, fmt.Errorf("kafka: topics %v not visible 30s after creation", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
