package sinkrunner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/sinks"
)

// fenceLog is a downstream that keeps the highest fence per partition
// (a sinks.FenceGuard) and notes the fence of every delivery.
type fenceLog struct {
	guard   sinks.FenceGuard
	mu      sync.Mutex
	applied map[string]bool
	fences  []int64 // generations admitted, in order
	refused []string
}

func (f *fenceLog) Deliver(_ context.Context, d sinks.Delivery) error {
	err := f.guard.Apply(d, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.applied[d.IdempotencyKey] = true
		f.fences = append(f.fences, d.Fence.Generation)
		return nil
	})
	if errors.Is(err, sinks.ErrFenced) {
		f.mu.Lock()
		f.refused = append(f.refused, d.IdempotencyKey+"@"+d.Fence.String())
		f.mu.Unlock()
	}
	return err
}

func (f *fenceLog) state() (applied int, fences []int64, refused []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.applied), append([]int64(nil), f.fences...), append([]string(nil), f.refused...)
}

// The runner group is deleted while empty (as the broker does once its
// offsets retention has passed) and the runner starts again: the group
// generation starts over at 1, but the fence must keep rising, or a
// downstream that keeps the highest fence per partition refuses every
// later delivery.
func TestFenceRisesAcrossRecreatedGroup(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("regroup"), env.Name("in")
	env.CreateTopic(in, 1)
	down := &fenceLog{applied: map[string]bool{}}
	g, err := graph.Compile(hookTopology(in, down))
	if err != nil {
		t.Fatal(err)
	}
	replica := env.Start(env.Config(app, "r1"), g)
	defer replica.Stop()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const per = 10
	produced := 0
	round := func(name string) {
		t.Helper()
		var recs []*kgo.Record
		for i := range per {
			recs = append(recs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "%s-%d", name, i), Value: []byte(name)})
		}
		env.ProduceRecords(recs...)
		produced += per
		rn := startRunnerWith(t, env, app, "a", hookTopology(in, down), nil, nil)
		waitFor(t, "round "+name+" settled", 60*time.Second, func() bool {
			applied, _, refused := down.state()
			return applied+len(refused) >= produced
		})
		if err := rn.stop(); err != nil {
			t.Fatal(err)
		}
	}
	round("one")
	round("two")
	round("three")
	group := app + "-sinks"
	waitFor(t, "the runner group deleted", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := adm.DeleteGroups(ctx, group)
		return err == nil && res[group].Err == nil
	})
	round("four")
	applied, fences, refused := down.state()
	t.Logf("fences admitted %v, refused %v", fences, refused)
	if len(refused) > 0 || applied != produced {
		t.Errorf("%d of %d deliveries applied, %d refused for a fence below one seen before: the fence went back when the group was created again", applied, produced, len(refused))
	}
}
