package processor_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
)

// /healthz answers at once, /readyz once the replica is in a session, and
// /metrics carries the engine's series.
func TestHTTPEndpoints(t *testing.T) {
	env := enginetest.New(t)
	in := env.Name("in")
	env.CreateTopic(in, 2)
	env.Produce(in, 0, 100)
	reg := prometheus.NewRegistry()
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: env.Name("app"), InstanceID: "r1",
		Registerer: reg}, copyTopic(in, env.Name("out")))
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, reg)
	srv.waitCode("/readyz", http.StatusOK, 60*time.Second)
	if code, body := srv.get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	env.WaitCount(env.Name("out"), 100, 60*time.Second)
	code, body := srv.get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{"onceflow_transactions_total", "onceflow_records_in_total", "onceflow_commit_latency_seconds", "onceflow_build_info{", "onceflow_consumer_lag{", `onceflow_rejected_records_total{app=`, "onceflow_transaction_timeout_seconds{app=", "onceflow_slow_commits_total{app="} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
