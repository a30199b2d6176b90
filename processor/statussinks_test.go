package processor_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// A replica with an external sink shows the sink's deliveries on its
// status page: those that succeeded and the one dead-lettered.
func TestStatusPageShowsSinks(t *testing.T) {
	env := enginetest.New(t)
	app, in := env.Name("app"), env.Name("in")
	env.CreateTopic(in, 2)
	var delivered atomic.Int64
	hook := sinks.Func(func(_ context.Context, d sinks.Delivery) error {
		if string(d.Payload) == `"v3"` {
			return sinks.PermanentError(errors.New("rejected by the receiver"))
		}
		delivered.Add(1)
		return nil
	})
	tp := topology.New("app")
	topology.ToSink(topology.Source(tp, in, serde.String(), serde.String()), "hook", hook, serde.JSON[string](), nil)
	reg := prometheus.NewRegistry()
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: app, InstanceID: "r1", StateDir: t.TempDir(),
		Registerer: reg, Sinks: sinks.RunnerConfig{BackoffBase: time.Millisecond, BackoffCap: 10 * time.Millisecond, CommitInterval: 50 * time.Millisecond}}, tp)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, reg)
	for i := range 10 {
		env.ProduceRaw(in, fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "v%d", i))
	}
	enginetest.WaitFor(t, "9 deliveries and 1 dead letter", 60*time.Second, func() bool {
		s := p.Status().Sinks
		return len(s) == 1 && s[0].Succeeded == 9 && s[0].DeadLettered == 1
	})
	if s := p.Status().Sinks[0]; s.Sink != "hook" || s.Unknown != 0 || s.Parked != 0 || delivered.Load() != 9 {
		t.Errorf("sink status %+v, delivered %d", s, delivered.Load())
	}
	code, page := srv.get("/")
	if code != http.StatusOK {
		t.Fatalf("/: %d", code)
	}
	if want := `<tr><td>hook</td><td class="n">9</td><td class="n warn">1</td>`; !strings.Contains(page, want) {
		t.Errorf("page lacks %q:\n%s", want, page)
	}
}
