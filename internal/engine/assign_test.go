package engine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// mergeCountTopology counts the records of each key over two merged
// source topics: a task needs partition p of both.
func mergeCountTopology(a, b, out string) *topology.Topology {
	tp := topology.New("merge-count")
	merged := topology.Merge(
		topology.Source(tp, a, serde.String(), serde.String()),
		topology.Source(tp, b, serde.String(), serde.String()))
	counts := topology.GroupByKey(merged, "by-key", serde.String(), serde.String()).Count("counts")
	topology.To(counts, out, serde.String(), serde.Int64())
	return tp
}

// produceKeys writes perKey records for each of keys keys to topic.
func produceKeys(env *enginetest.Env, topic string, keys, perKey int) {
	rs := make([]*kgo.Record, 0, keys*perKey)
	for i := range keys * perKey {
		rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k-%02d", i%keys), Value: fmt.Appendf(nil, "%s-%d", topic, i)})
	}
	env.ProduceRecords(rs...)
}

// lastCounts reads the committed counts of out and returns the last one
// of every key (a key's counts are in one partition, in order).
func lastCounts(env *enginetest.Env, out string) map[string]int64 {
	got := map[string]int64{}
	for _, r := range env.Read(out) {
		got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
	}
	return got
}

// waitConsumed waits until the group's committed offsets reach the end of
// every partition of topics.
func waitConsumed(t *testing.T, env *enginetest.Env, group string, within time.Duration, topics ...string) {
	t.Helper()
	waitFor(t, "the inputs to be consumed", within, func() bool {
		for _, topic := range topics {
			end, done := env.EndOffsets(topic), env.CommittedOffsets(group, topic)
			for p, o := range end {
				if done[p] < o {
					return false
				}
			}
		}
		return true
	})
}

// Counting a merge of two topics on several replicas gives every key the
// count it has over both topics: all partitions of one task (partition p
// of both topics) are processed by one replica.
func TestMergeCountAcrossReplicas(t *testing.T) {
	for _, replicas := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", replicas), func(t *testing.T) {
			env := enginetest.New(t)
			a, b, out, app := env.Name("ma"), env.Name("mb"), env.Name("out"), env.Name("app")
			env.CreateTopic(a, 6)
			env.CreateTopic(b, 6)
			g := compile(t, mergeCountTopology(a, b, out))
			var rs []*enginetest.Replica
			for i := range replicas {
				rs = append(rs, env.Start(env.Config(app, fmt.Sprintf("r%d", i+1)), g))
			}
			waitFor(t, "every replica in one generation", 60*time.Second, func() bool {
				gen := rs[0].E.Status().Generation
				for _, r := range rs {
					if st := r.E.Status(); !st.InSession || !st.Ready || st.Generation != gen {
						return false
					}
				}
				return len(env.Members(app)) == replicas
			})
			for _, r := range rs {
				st := r.E.Status()
				var tasks []string
				for _, ts := range st.Tasks {
					tasks = append(tasks, fmt.Sprintf("%s[%d]", strings.TrimPrefix(ts.Topic, env.Name("")), ts.Partition))
				}
				t.Logf("%s generation %d: %v", st.InstanceID, st.Generation, tasks)
			}
			const keys, perKey = 60, 50
			produceKeys(env, a, keys, perKey)
			produceKeys(env, b, keys, perKey)
			waitConsumed(t, env, app, 90*time.Second, a, b)
			for _, r := range rs {
				if err := r.Stop(); err != nil {
					t.Error(err)
				}
			}
			got := lastCounts(env, out)
			var wrong []string
			for _, k := range slices.Sorted(maps.Keys(got)) {
				if got[k] != 2*perKey {
					wrong = append(wrong, fmt.Sprintf("%s=%d", k, got[k]))
				}
			}
			if len(got) != keys || len(wrong) > 0 {
				t.Errorf("%d keys, %d of them not at %d: %v", len(got), len(wrong), 2*perKey, wrong)
			}
		})
	}
}

// splitter is a member that offers the task assignor's protocol name but
// assigns topic-partitions round robin, which splits tasks.
type splitter struct{ kgo.GroupBalancer }

func (splitter) ProtocolName() string { return kafka.TaskAssignorName }

// A replica that is given part of a task processes nothing of it and
// stops with ErrTaskSplit.
func TestSplitTaskIsRefused(t *testing.T) {
	env := enginetest.New(t)
	a, b, out, app := env.Name("ma"), env.Name("mb"), env.Name("out"), env.Name("app")
	env.CreateTopic(a, 3)
	env.CreateTopic(b, 3)
	produceKeys(env, a, 6, 2)
	produceKeys(env, b, 6, 2)
	// The foreign member joins first, so it leads the group and plans.
	foreign, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.ConsumerGroup(app), kgo.ConsumeTopics(a, b),
		kgo.Balancers(splitter{kgo.RoundRobinBalancer()}), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			fs := foreign.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	waitFor(t, "the foreign member to join", 30*time.Second, func() bool { return len(env.Members(app)) == 1 })
	r := env.Start(env.Config(app, "r1"), compile(t, mergeCountTopology(a, b, out)))
	err, ok := r.Wait(60 * time.Second)
	if !ok {
		t.Fatalf("the replica still runs with part of a task (%+v)", r.E.Status().Tasks)
	}
	t.Logf("Run: %v", err)
	if !errors.Is(err, engine.ErrTaskSplit) {
		t.Errorf("Run returned %v, want ErrTaskSplit", err)
	}
	if n := r.E.Stats().RecordsIn; n != 0 {
		t.Errorf("%d records processed", n)
	}
	foreign.Close()
	<-polled
}
