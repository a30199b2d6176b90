//go:build !race

// Drives sarama's transactional producer through failed produce requests:
// race-free pass only, see producer_errors_test.go.

package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// Every produce to one output partition fails with an error that is not
// the cluster's to clear and not a record the engine can reject: after
// RepeatBound aborted transactions on the same input offset, Run returns
// ErrRepeatedFailure naming the partition, the offset and the failure,
// instead of rewinding forever.
func TestRepeatedFailureStopsTheReplica(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("injects produce errors with the embedded broker's faults")
	}
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	env.CreateTopic(out, 2)
	h := env.Broker.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: out, Partitions: []int32{1}, Err: kerr.InvalidRecord, Count: -1})
	defer h.Remove()
	env.Produce(in, 0, 200)

	r := env.Start(env.Config(app, "r1"), compile(t, copyex.Topology(in, out)))
	err, ok := r.Wait(60 * time.Second)
	if !ok {
		t.Fatalf("the replica still runs after 60s of failing transactions (%+v)", r.E.Stats())
	}
	t.Logf("run: %v", err)
	if !errors.Is(err, engine.ErrRepeatedFailure) {
		t.Fatalf("run returned %v, want ErrRepeatedFailure", err)
	}
	for _, want := range []string{in + "/0 offset 0", "failed the validation on broker"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	s := r.E.Stats()
	t.Logf("sessions %d, aborted %d, committed %d", s.Sessions, s.Aborted, s.Committed)
	if s.Aborted != engine.RepeatBound || s.Committed != 0 {
		t.Errorf("stats %+v: want %d aborts and no commit", s, engine.RepeatBound)
	}
	if n := len(env.Read(out)); n != 0 {
		t.Errorf("output has %d records, want none", n)
	}
}
