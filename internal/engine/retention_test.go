package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// sinkTopology delivers every input record to two external sinks, "hook"
// and "db".
func sinkTopology(in string) *topology.Topology {
	tp := topology.New("shop")
	src := topology.Source(tp, in, serde.String(), serde.String())
	ok := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
	topology.ToSink(src, "hook", ok, serde.String(), nil)
	topology.ToSink(src, "db", ok, serde.String(), nil)
	return tp
}

// Dead letters, rejected records and outbox requests exist in no other
// topic: their topics keep them with no time or size retention and no
// compaction. Fresh ones are created so; ones left by an earlier release
// with the broker's 7 days (or a size, or compaction) are switched at
// start.
func TestTopicsHoldingTheOnlyCopyNeverExpire(t *testing.T) {
	env := enginetest.New(t)
	in, app := env.Name("in"), env.Name("app")
	env.CreateTopic(in, 2)
	outbox, dlq, rejected := app+"-sink-hook", app+"-sink-hook-dlq", app+"-rejected"
	week := "604800000"
	for _, topic := range []string{outbox, dlq, rejected} {
		env.CreateTopic(topic, 2)
		env.SetTopicConfig(topic, "retention.ms", week)
	}
	env.SetTopicConfig(dlq, "retention.bytes", "1073741824")
	env.SetTopicConfig(outbox, "retention.bytes", "1073741824")
	env.SetTopicConfig(rejected, "cleanup.policy", "compact") // keeps only the latest record of a key
	r := env.Start(env.Config(app, "r1"), compile(t, sinkTopology(in)))
	r.WaitReady(t, 60*time.Second)
	for _, topic := range []string{outbox, dlq, rejected, app + "-sink-db", app + "-sink-db-dlq"} {
		for name, want := range map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"} {
			if v := env.TopicConfig(topic, name); v != want {
				t.Errorf("%s: %s=%s, want %s", topic, name, v, want)
			}
		}
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A dead-letter topic that would delete its records, on a cluster that
// refuses to change its configs (no ALTER_CONFIGS): the replica does not
// start, and says what to run.
func TestExpiringDeadLettersRefuseToStart(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("needs the embedded broker to refuse the config change")
	}
	in, app := env.Name("in"), env.Name("app")
	env.CreateTopic(in, 2)
	dlq := app + "-sink-hook-dlq"
	env.CreateTopic(dlq, 2)
	env.SetTopicConfig(dlq, "retention.ms", "604800000")
	c := env.Broker.Cluster()
	c.ControlKey(int16(kmsg.IncrementalAlterConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.IncrementalAlterConfigsRequest)
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			rr.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil, true
	})
	e, err := engine.New(env.Config(app, "r1"), compile(t, sinkTopology(in)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = e.Run(ctx)
	if !errors.Is(err, kafka.ErrExpiring) {
		t.Fatalf("Run: %v, want kafka.ErrExpiring", err)
	}
	for _, want := range []string{dlq, "retention.ms=604800000", "kafka-configs.sh", "--add-config retention.ms=-1", "ALTER_CONFIGS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
