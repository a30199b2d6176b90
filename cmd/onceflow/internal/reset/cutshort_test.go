package reset_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/reset"
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/statedir"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// A reset cut short after its third step (marker created, state wiped,
// internal offsets dropped, internal topics deleted) and before it
// commits the input offsets, then a replica started instead of the reset
// run again: the group's input offsets say 30 records were counted, but
// the counts they were counted into are gone. The replica must not go on
// silently from there (a count of 1 for a key that has 11 records): it
// refuses to start, naming the unfinished reset; the reset run again
// finishes, and the replica then counts every record from the start.
func TestResetCutShortThenReplicaStarts(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	produce := func(n int) {
		var rs []*kgo.Record
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", i), Value: []byte{'a' + byte(i%3)}})
		}
		env.ProduceRecords(rs...)
	}
	produce(30)
	tp := topology.New("count")
	byValue := topology.Map(topology.Source(tp, in, serde.String(), serde.String()), func(_, v string) (string, string, error) { return v, v, nil })
	counts := topology.Count(topology.Repartition(byValue, "byvalue", serde.String(), serde.String()), "counts", serde.String())
	topology.To(counts, out, serde.String(), serde.Int64())
	dir := t.TempDir()

	// run runs a replica until out has n records or it stops; it returns
	// the last count per key and the replica's error.
	run := func(n int, more func()) (map[string]int64, error) {
		t.Helper()
		p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r1", StateDir: dir, CommitInterval: 20 * time.Millisecond}, tp)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		stop := func() error { cancel(); return <-done }
		if more != nil {
			more()
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			select {
			case err := <-done:
				cancel()
				return nil, err
			default:
			}
			recs, err := verify.ReadAll(context.Background(), env.Brokers, out)
			if err == nil && len(recs) >= n {
				last := map[string]int64{}
				for _, r := range recs {
					last[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
				}
				return last, stop()
			}
			if time.Now().After(deadline) {
				_ = stop()
				t.Fatalf("%d of %d outputs after 60 s (%v)", len(recs), n, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if got, err := run(30, nil); err != nil || got["a"] != 10 {
		t.Fatalf("first run: counts %v (%v), want 10 each", got, err)
	}

	// The reset's plan, then its steps 1 to 3 by hand, as a reset killed
	// before step 4 leaves things.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plan, err := reset.Run(ctx, reset.Config{Brokers: env.Brokers, AppID: app, To: "earliest", StateDir: dir, DryRun: true}, io.Discard)
	if err != nil || len(plan.Delete) != 2 {
		t.Fatalf("plan %+v: %v", plan, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != statedir.LockFile {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, graph.ResetMarkerTopic(app)); err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	set := kadm.TopicsSet{}
	for _, topic := range plan.DropOffsets {
		for p := range committed[topic] {
			set.Add(topic, p)
		}
	}
	if _, err := adm.DeleteOffsets(ctx, app, set); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopics(ctx, plan.Delete...); err != nil {
		t.Fatal(err)
	}
	if err := reset.AwaitGone(ctx, adm, plan.Delete, 0); err != nil {
		t.Fatal(err)
	}

	// A replica started now refuses.
	if _, err := run(33, nil); !errors.Is(err, processor.ErrResetUnfinished) {
		t.Fatalf("replica after a reset cut short: %v, want processor.ErrResetUnfinished", err)
	}
	// The reset run again finishes; the replica then counts the 30 records
	// and 3 more from nothing.
	if _, err := reset.Run(ctx, reset.Config{Brokers: env.Brokers, AppID: app, To: "earliest", StateDir: dir}, io.Discard); err != nil {
		t.Fatalf("reset run again: %v", err)
	}
	got, err := run(30+33, func() { produce(3) })
	if err != nil {
		t.Fatalf("replica after the reset: %v", err)
	}
	if got["a"] != 11 || got["b"] != 11 || got["c"] != 11 {
		t.Fatalf("replica after the reset: last counts %v, want 11 each", got)
	}
}
