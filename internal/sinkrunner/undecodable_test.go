package sinkrunner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// A ledger entry the runner cannot decode (here one written by a newer
// release, with a state this one does not know) neither wedges its key
// nor the commit window of its partition: the delivery is parked as
// unknown, never sent, listed with the reason, resolvable; the deliveries
// after it, on the same key and others, go on, and the offsets are
// committed past it.
func TestUndecodableEntryIsParked(t *testing.T) {
	env := enginetest.New(t)
	app := env.Name("shop")
	in := env.Name("orders")
	env.CreateTopic(in, 1)
	hook := newScripted(true)
	tp := topology.New("shop")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.String(), nil)
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()
	env.ProduceRecords(
		&kgo.Record{Topic: in, Key: []byte("customer-0"), Value: []byte("newer")},
		&kgo.Record{Topic: in, Key: []byte("customer-0"), Value: []byte("after-same-key")},
		&kgo.Record{Topic: in, Key: []byte("customer-1"), Value: []byte("other-key")},
	)
	outbox := app + "-sink-hook"
	env.WaitCount(outbox, 3, 30*time.Second)
	keys := map[string]string{}
	var part int32
	end := map[int32]int64{}
	for _, r := range env.Read(outbox) {
		end[r.Partition] = r.Offset + 1 // past the last request (not the commit marker)
		keys[string(r.Value)] = r.Headers[sinks.HeaderIdempotencyKey]
		if string(r.Value) == "newer" {
			part = r.Partition
		}
	}

	// The ledger holds, for the first delivery, an entry this release
	// cannot read.
	ledger := graph.LedgerTopic(outbox)
	compact := "compact"
	env.CreateTopicConfigs(ledger, int32(env.Partitions(outbox)), map[string]*string{"cleanup.policy": &compact})
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	raw := []byte(`{"state":"settled-elsewhere","attempts":1}`)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: ledger, Partition: part, Key: []byte(keys["newer"]), Value: raw}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	startRunner(t, env, app, "r1", tp)
	defer func() {
		if t.Failed() {
			same, _ := hook.counts("after-same-key")
			other, _ := hook.counts("other-key")
			t.Logf("committed %v, end %v; after-same-key %d calls, other-key %d calls",
				env.CommittedOffsets(app+"-sinks", outbox), end, same, other)
		}
	}()
	waitFor(t, fmt.Sprintf("the outbox committed to its end %v", end), 30*time.Second, func() bool {
		return fmt.Sprint(env.CommittedOffsets(app+"-sinks", outbox)) == fmt.Sprint(end)
	})
	for _, c := range []struct {
		payload string
		calls   int
	}{{"newer", 0}, {"after-same-key", 1}, {"other-key", 1}} {
		if calls, _ := hook.counts(c.payload); calls != c.calls {
			t.Errorf("%s: %d calls, want %d", c.payload, calls, c.calls)
		}
	}
	unk, err := sinkadmin.Unknown(context.Background(), env.Brokers, app, "hook")
	if err != nil {
		t.Fatal(err)
	}
	if len(unk) != 1 || unk[0].Key != keys["newer"] || unk[0].Class != sinkrunner.ClassUndecodable || string(unk[0].Undecodable) != string(raw) {
		t.Fatalf("parked: %+v; want %s, class %s, with the entry it could not read", unk, keys["newer"], sinkrunner.ClassUndecodable)
	}
	t.Logf("parked: %s", unk[0].LastError)
	if _, err := sinkadmin.Resolve(context.Background(), env.Brokers, app, "hook", keys["newer"], wire.SinkResolveRetry); err != nil {
		t.Fatal(err)
	}
	until(t, "the parked delivery resolved as retry and sent", func() bool {
		return ledgerState(t, env, app, "hook", keys["newer"]) == sinkrunner.Succeeded
	})
	if calls, effects := hook.counts("newer"); calls != 1 || effects != 1 {
		t.Errorf("newer after the resolve: %d calls, %d effects; want 1 and 1", calls, effects)
	}
}
