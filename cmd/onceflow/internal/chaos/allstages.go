package chaos

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/replicas"
	"github.com/onceflow/onceflow/examples/allstages"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/receiver"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// The topologies a run can drive.
const (
	TopologyOrders    = "orders"
	TopologyAllStages = "allstages"
)

// The misbehaviour of the allstages run's receiver, which is not
// idempotent: every request it admits is applied.
const (
	receiverUnavailable = 0.03
	receiverThrottle    = 0.02
	receiverDrop        = 0.02
	receiverBadRequest  = 0.005
)

// allStagesSinks are the sinks of the allstages topology.
var allStagesSinks = []string{allstages.LineSink, allstages.TickSink}

// hook is the receiver of an allstages run: not idempotent, misbehaving,
// every effect it applies recorded.
type hook struct {
	recv *receiver.Receiver
	url  string
	stop context.CancelFunc
	done chan error

	mu struct {
		sync.Mutex
		effects []verify.Effect
	}
}

func startHook(seed int64) (*hook, error) {
	h := &hook{done: make(chan error, 1)}
	recv, err := receiver.New(receiver.Config{NotIdempotent: true, UnavailableRate: receiverUnavailable, ThrottleRate: receiverThrottle,
		DropRate: receiverDrop, BadRequestRate: receiverBadRequest, Seed: uint64(seed) + 1,
		OnEffect: func(e receiver.Effect) {
			h.mu.Lock()
			h.mu.effects = append(h.mu.effects, verify.Effect{Key: e.Key, Payload: e.Payload, Sender: "fence " + e.Fence + " attempt " + e.Attempt})
			h.mu.Unlock()
		}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: receiver: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.recv, h.url, h.stop = recv, "http://"+ln.Addr().String()+"/hook", cancel
	go func() { h.done <- recv.Serve(ctx, ln) }()
	return h, nil
}

func (h *hook) effects() []verify.Effect {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]verify.Effect(nil), h.mu.effects...)
}

// senders says who sent the effects applied for key.
func (h *hook) senders(key string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.mu.effects {
		if e.Key == key {
			out = append(out, e.Sender)
		}
	}
	return out
}

func (h *hook) close() {
	h.stop()
	<-h.done
}

// setupAllStages creates the source topics and starts the receiver; it
// returns the replicas' command line.
func (r *runner) setupAllStages(ctx context.Context, replication int16) ([]string, error) {
	r.prefix = r.app
	tp := allstages.TopicsFor(r.prefix)
	for _, topic := range []string{tp.Web, tp.App} {
		resp, err := r.adm.CreateTopic(ctx, partitions, replication, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return nil, fmt.Errorf("chaos: create %s: %w", topic, err)
		}
	}
	h, err := startHook(r.cfg.Seed)
	if err != nil {
		return nil, err
	}
	r.hook = h
	r.inputs = []string{tp.Web, tp.App}
	return []string{"run", "allstages", "--topic-prefix", r.prefix, "--webhook", h.url}, nil
}

// runAllStages writes the planned input while faults are injected, waits
// until it is consumed, writes the closing records, settles the sinks'
// parked deliveries as an operator would, and checks every output, window
// and effect against the truth.
func (r *runner) runAllStages(ctx context.Context) error {
	cfg := r.cfg
	events := max(int(cfg.Rate*cfg.Duration.Seconds()), 1)
	plan, err := gen.PlanAllStages(gen.AllStagesConfig{Events: events, Partitions: partitions, Seed: cfg.Seed,
		Start: time.Now().Add(-30 * time.Minute).Truncate(time.Second), Rate: cfg.Rate})
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	truth, err := plan.Truth(partitions)
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	pctx, cancelProduce := context.WithCancel(ctx)
	defer cancelProduce()
	done := make(chan error, 1)
	go func() {
		done <- gen.ProduceAllStages(pctx, r.brokers, r.prefix, partitions, plan.Records, cfg.Rate, true, cfg.Logger.Named("producer"))
	}()
	fmt.Fprintf(cfg.Progress, "writing %d events to %s at %.0f/s (%d duplicates, %d conflicts, %d out of order, %d late); faults %v for %v; receiver not idempotent at %s\n",
		len(plan.Records), strings.Join(r.inputs, ","), cfg.Rate, plan.Duplicates, plan.Conflicts, plan.OutOfOrder, plan.Late, cfg.Faults, cfg.Duration, r.hook.url)

	start := time.Now()
	stopWatch := r.startWatch(ctx, start)
	defer stopWatch()
	if err := r.inject(ctx, start, start.Add(cfg.Duration)); err != nil {
		return err
	}
	r.res.FaultSeconds = time.Since(start).Seconds()
	select {
	case err = <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("chaos: produce: %w", err)
	}
	fmt.Fprintf(cfg.Progress, "faults done after %.1fs; input written; waiting (at most %v) until all %d records are committed\n",
		r.res.FaultSeconds, cfg.DrainTimeout, len(plan.Records))
	if err := r.drain(ctx, len(plan.Records)); err != nil {
		return err
	}
	if err := gen.ProduceAllStages(ctx, r.brokers, r.prefix, partitions, plan.Closers, 0, true, cfg.Logger.Named("producer")); err != nil {
		return fmt.Errorf("chaos: produce the closing records: %w", err)
	}
	if err := r.drain(ctx, len(plan.Records)+len(plan.Closers)); err != nil {
		return err
	}
	r.res.Seconds = time.Since(start).Seconds()
	stopWatch()
	r.collectWatch()
	fmt.Fprintf(cfg.Progress, "all input committed %.1fs after the start; waiting for every output, window and effect, settling parked deliveries\n", r.res.Seconds)

	if err := r.settle(ctx, truth); err != nil {
		return err
	}
	replicas.StopAll(20*time.Second, r.reps...)
	// Read again once every replica stopped: a zombie's last effect counts.
	// What is still parked is read with it: a missing effect whose
	// delivery an operator sees parked is not lost.
	sts, err := r.readLedgers(ctx)
	if err != nil {
		return err
	}
	r.notePendingApplied(sts)
	var parked []verify.Effect
	for _, st := range sts {
		parked = append(parked, st.parked...)
	}
	rep, err := r.checkAllStages(ctx, truth, parked...)
	if err != nil {
		return err
	}
	r.res.AllStages = &rep
	r.res.ParkedAtEnd = len(parked)
	never := r.uncommanded(parked)
	r.res.ParkedUnresolved = len(never)
	r.res.Receiver = r.hook.recv.Stats()
	r.res.Sinks = nil
	for _, sink := range allStagesSinks {
		var st sinkadmin.Status
		if err := r.admin(ctx, func(ctx context.Context) (err error) {
			st, err = r.views[sink].Status(ctx)
			return err
		}); err != nil {
			r.cfg.Logger.Warn("sink status failed", "sink", sink, "error", err)
			continue
		}
		r.res.Sinks = append(r.res.Sinks, st)
	}
	r.res.Events, r.res.Accepted = rep.Input, truth.Accepted
	r.res.Lost = rep.AccountCounts.Missing + rep.ItemCounts.Missing + rep.Windows.Missing + rep.LineEffects.Missing + rep.TickEffects.Missing
	r.res.ParkedVisible = rep.LineEffects.Parked + rep.TickEffects.Parked
	r.res.Duplicated = rep.AccountCounts.Doubled + rep.ItemCounts.Doubled + rep.Windows.Doubled + rep.LineEffects.Doubled + rep.TickEffects.Doubled
	r.res.Unexpected = rep.AccountCounts.Unexpected + rep.ItemCounts.Unexpected + rep.Windows.Unexpected + rep.LineEffects.Unexpected + rep.TickEffects.Unexpected
	for _, p := range rep.Problems {
		r.res.Violations = append(r.res.Violations, "verify: "+p)
	}
	if len(never) > 0 {
		r.res.Violations = append(r.res.Violations, fmt.Sprintf("%d deliveries parked at the end that the run's settling never resolved or redrove: %v",
			len(never), never[:min(len(never), 5)]))
	}
	if v := r.res.Receiver.Violations; v > 0 {
		r.res.Violations = append(r.res.Violations, fmt.Sprintf("receiver: %d effects applied twice for one idempotency key", v))
	}
	r.res.OK = len(r.res.Violations) == 0
	if cfg.Chart != "" {
		return WriteChart(*r.res, cfg.Chart)
	}
	return nil
}

// checkAllStages reads the outputs and checks them with the effects the
// receiver applied so far (and the deliveries parked, when given).
func (r *runner) checkAllStages(ctx context.Context, truth gen.AllStagesTruth, parked ...verify.Effect) (verify.AllStagesReport, error) {
	vctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // a million events give millions of window results
	defer cancel()
	out, err := verify.ReadAllStages(vctx, r.brokers, r.prefix, r.app+"-rejected")
	if err != nil {
		return verify.AllStagesReport{}, fmt.Errorf("chaos: verify: %w", err)
	}
	out.Effects, out.Parked = r.hook.effects(), parked
	return verify.CheckAllStages(truth, out), nil
}

// operatorFault writes the operator's commands for what is parked now
// (a batch per sink and kind) and SIGKILLs a replica right after (the
// runner applying a command may be the one killed), starting it again
// after up to 2 s.
func (r *runner) operatorFault(ctx context.Context, f *Fault) error {
	n := 0
	sts, err := r.readLedgers(ctx)
	if err == nil {
		n, err = r.operatorCommands(ctx, sts)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		r.cfg.Logger.Warn("operator commands failed; the replica is killed anyway", "error", err)
	}
	r.res.OperatorFaults++
	rep := r.reps[r.rnd.IntN(len(r.reps))]
	rep.Kill()
	down := time.Duration(r.rnd.Int64N(int64(2 * time.Second)))
	if err := sleep(ctx, down); err != nil {
		return err
	}
	f.Target, f.Note = rep.Name, fmt.Sprintf("%d commands (resolve, redrive), then SIGKILL, restarted after %.1fs", n, down.Seconds())
	return rep.Start()
}
