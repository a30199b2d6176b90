//go:build !race

// This test drives sarama's producer through failed produce requests, where
// sarama has a data race of its own (see
// internal/engine/producer_errors_test.go): it runs in the race-free pass.

package processor_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
)

// Every produce to the output fails: the replica aborts and rewinds in a
// loop without ever committing. Past the stall timeout /healthz answers 503
// naming the partition; once produce works again it answers ok.
func TestHealthzFailsWhileStalled(t *testing.T) {
	env := enginetest.New(t)
	if env.Broker == nil {
		t.Skip("injects produce errors with the embedded broker's faults")
	}
	in, out := env.Name("in"), env.Name("out")
	env.CreateTopic(in, 1)
	const stallTimeout = 2 * time.Second
	reg := prometheus.NewRegistry()
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: env.Name("app"), InstanceID: "r1",
		Registerer: reg, StallTimeout: stallTimeout}, copyTopic(in, out))
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, reg)
	srv.waitCode("/readyz", http.StatusOK, 60*time.Second)
	env.Produce(in, 0, 100)
	env.WaitCount(out, 100, 60*time.Second)
	srv.waitCode("/healthz", http.StatusOK, 5*time.Second)

	h := env.Broker.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: out, Err: kerr.InvalidRecord, Count: -1})
	env.Produce(in, 100, 100)
	stalled := time.Now()
	body := srv.waitCode("/healthz", http.StatusServiceUnavailable, 30*time.Second)
	t.Logf("/healthz after %v: %s", time.Since(stalled).Round(time.Millisecond), strings.TrimSpace(body))
	if !strings.Contains(body, "partition "+in+"/0") || !strings.Contains(body, "aborted since the last commit") {
		t.Errorf("/healthz does not name the stalled partition and the aborts: %q", body)
	}
	if s := p.Stats(); s.Aborted < 2 || s.Committed == 0 {
		t.Errorf("stats %+v: want a loop of aborts after a commit", s)
	}
	// The status page shows the partition stalled, and the abort loop.
	if code, page := srv.get("/"); code != http.StatusOK || !strings.Contains(page, `<td class="bad">stalled</td>`) ||
		!strings.Contains(page, "since the last commit)") || !strings.Contains(page, "unhealthy: ") {
		t.Errorf("status page while stalled: %d, want the task stalled, the aborts and the health reason:\n%s", code, page)
	}
	if st := p.Status(); len(st.Tasks) != 1 || st.Tasks[0].State != processor.TaskStalled || st.Tasks[0].Pending < stallTimeout || st.AbortsSinceCommit < 2 {
		t.Errorf("status while stalled: %+v", st)
	}
	if time.Since(stalled) < stallTimeout {
		t.Errorf("/healthz failed %v after the stall began, before the stall timeout %v", time.Since(stalled), stallTimeout)
	}

	h.Remove()
	env.WaitCount(out, 200, 60*time.Second)
	srv.waitCode("/healthz", http.StatusOK, 10*time.Second)
	if st := p.Status(); len(st.Tasks) != 1 || st.Tasks[0].State != processor.TaskRunning || st.Health != "" {
		t.Errorf("status after recovery: %+v", st)
	}
}
