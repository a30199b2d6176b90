package reset_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/reset"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// A replica of a topology with a repartition topic and a store counts its
// input; after a reset to earliest a new run counts it again from
// nothing: the last count of every key is the input's, not twice it (as
// it would be on the old state, changelog or repartition offsets).
// Against ONCEFLOW_KAFKA_BROKERS when set, else the embedded broker.
func TestResetThenRunCountsAgainFromNothing(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	var rs []*kgo.Record
	for i := range 30 {
		rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", i), Value: []byte{'a' + byte(i%3)}})
	}
	env.ProduceRecords(rs...)
	tp := topology.New("count")
	byValue := topology.Map(topology.Source(tp, in, serde.String(), serde.String()), func(_, v string) (string, string, error) { return v, v, nil })
	counts := topology.Count(topology.Repartition(byValue, "byvalue", serde.String(), serde.String()), "counts", serde.String())
	topology.To(counts, out, serde.String(), serde.Int64())
	dir := t.TempDir()

	runUntil := func(outputs int) map[string]int64 {
		t.Helper()
		p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r1", StateDir: dir, CommitInterval: 20 * time.Millisecond}, tp)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		}()
		deadline := time.Now().Add(60 * time.Second)
		for {
			recs, err := verify.ReadAll(context.Background(), env.Brokers, out)
			if err == nil && len(recs) >= outputs {
				last := map[string]int64{}
				for _, r := range recs {
					last[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
				}
				return last
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d outputs after 60 s (%v)", len(recs), outputs, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if got := runUntil(30); got["a"] != 10 || got["b"] != 10 || got["c"] != 10 {
		t.Fatalf("first run: counts %v, want 10 each", got)
	}
	var text strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plan, err := reset.Run(ctx, reset.Config{Brokers: env.Brokers, AppID: app, To: "earliest", StateDir: dir}, &text)
	if err != nil {
		t.Fatalf("reset: %v\n%s", err, text.String())
	}
	if len(plan.Delete) != 2 || len(plan.Moves) != 2 || plan.StateEntries == 0 {
		t.Errorf("plan %+v:\n%s", plan, text.String())
	}
	if got := runUntil(60); got["a"] != 10 || got["b"] != 10 || got["c"] != 10 {
		t.Fatalf("run after reset: last counts %v, want 10 each (20: counted on top of the old state)", got)
	}
}
