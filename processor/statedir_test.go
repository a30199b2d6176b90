package processor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// A second replica started on a state dir a running replica holds is
// refused at once, and the error names the holder's pid.
func TestSecondReplicaOnOneStateDirIsRefused(t *testing.T) {
	env := enginetest.New(t)
	in, out := env.Name("in"), env.Name("out")
	env.CreateTopic(in, 1)
	tp := topology.New("count")
	counts := topology.Count(topology.Source(tp, in, serde.String(), serde.String()), "counts", serde.String())
	topology.To(counts, out, serde.String(), serde.Int64())
	dir := t.TempDir()
	cfg := processor.Config{Brokers: env.Brokers, ApplicationID: env.Name("app"), InstanceID: "r1", StateDir: dir}
	first, err := processor.New(cfg, tp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	enginetest.WaitFor(t, "the first replica ready", 30*time.Second, first.Ready)
	cfg.InstanceID = "r2"
	second, err := processor.New(cfg, tp)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	err = second.Run(rctx)
	want := fmt.Sprintf("state dir in use by another process (pid %d)", os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, processor.ErrStateDirInUse) || rctx.Err() != nil {
		t.Fatalf("second replica: %v, want %q at once", err, want)
	}
}
