package sinkrunner_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// A queued success write fails while the key's next delivery, to a sink
// that is not idempotent, waits behind it for its in-flight mark: that
// mark fails with it, so the next delivery is not sent on a mark that was
// never durable. After the ledger writer opens again, the first delivery
// is parked as unknown (its in-flight mark was durable, its success was
// not) and the rest go out once each, in order.
func TestFailedQueuedSuccessStopsTheKeysNextDelivery(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("sfail"), env.Name("in")
	outbox := app + "-sink-hook"
	env.CreateTopic(outbox, 1)
	s := &orderSink{effects: map[string]int{}}
	var failed atomic.Bool
	fault := func(key string, e sinkrunner.Entry) error {
		if key == "x" && e.State == sinkrunner.Succeeded && failed.CompareAndSwap(false, true) {
			return errors.New("injected: the changelog is unreachable")
		}
		return nil
	}
	rn := startRunnerWith(t, env, app, "a", hookTopology(in, s), nil, func(r *sinkrunner.Runner) { r.FailLedgerWrites(fault) })
	writeOutbox(t, env, outbox, [3]string{"k", "one", "x"}, [3]string{"k", "two", "y"}, [3]string{"k", "three", "z"})
	waitFor(t, "every record settled", 60*time.Second, func() bool { return env.CommittedOffsets(app+"-sinks", outbox)[0] == 3 })
	time.Sleep(300 * time.Millisecond) // a re-send would come now
	seen, effects := s.state()
	if !failed.Load() {
		t.Fatal("the success of x was never written")
	}
	if len(seen) != 3 || seen[0] != "one" || seen[1] != "two" || seen[2] != "three" {
		t.Errorf("requests %v, want one, two, three once each", seen)
	}
	var parked int64
	for _, st := range rn.r.Status() {
		parked += st.Outcomes[sinkrunner.OutcomeUnknown]
	}
	if parked != 1 || effects["x"] != 1 {
		t.Errorf("%d parked, effects %v; want x sent once and parked", parked, effects)
	}
}
