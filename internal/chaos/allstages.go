package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/onceflow/onceflow/examples/allstages"
	"github.com/onceflow/onceflow/internal/gen"
	"github.com/onceflow/onceflow/internal/receiver"
	"github.com/onceflow/onceflow/internal/sinkadmin"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/verify"
	"github.com/onceflow/onceflow/sinks"
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

	// Outputs after the input commits come in the later sub-topologies
	// and the sink runners; unknown and dead-lettered deliveries wait for
	// an operator. Settle them in batches and check until complete, or
	// until the drain timeout.
	settleStart := time.Now()
	deadline := settleStart.Add(cfg.DrainTimeout)
	r.hook.recv.Heal()
	fmt.Fprintf(cfg.Progress, "receiver healed: no more injected refusals or dropped answers while parked deliveries settle\n")
	var rep verify.AllStagesReport
	for {
		if err := r.restartExited(); err != nil {
			return err
		}
		if err := r.operate(ctx); err != nil {
			return err
		}
		rep, err = r.checkAllStages(ctx, truth)
		if err != nil && ctx.Err() != nil {
			return err
		}
		if err != nil {
			// Read again at the next pass (a broker slow to answer).
			r.cfg.Logger.Warn("reading the outputs failed; trying again", "error", err)
		} else if rep.Complete() && r.settled(ctx) {
			r.res.Settled = true
			break
		}
		if time.Now().After(deadline) {
			break
		}
		if err := sleep(ctx, 3*time.Second); err != nil {
			return err
		}
	}
	r.res.SettleSeconds = time.Since(settleStart).Seconds()
	if r.res.Settled {
		fmt.Fprintf(cfg.Progress, "settled %.1fs after all input was committed: every output, window and effect there, every delivery succeeded\n", r.res.SettleSeconds)
	} else {
		fmt.Fprintf(cfg.Progress, "not settled when the drain timeout ended, %.1fs after all input was committed\n", r.res.SettleSeconds)
	}
	for _, rep := range r.reps {
		rep.stop(20 * time.Second)
	}
	// Read again once every replica stopped: a zombie's last effect counts.
	// What is still parked is read with it: a missing effect whose
	// delivery an operator sees parked is not lost.
	parked, err := r.parked(ctx)
	if err != nil {
		return err
	}
	if rep, err = r.checkAllStages(ctx, truth, parked...); err != nil {
		return err
	}
	r.res.AllStages = &rep
	r.res.ParkedAtEnd = len(parked)
	var never []string
	for _, p := range parked {
		if !r.resolved[p.Key] {
			never = append(never, p.Key)
		}
	}
	r.res.ParkedUnresolved = len(never)
	r.res.Receiver = r.hook.recv.Stats()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	r.res.Sinks, err = sinkadmin.StatusOf(sctx, r.brokers, r.app, allStagesSinks)
	cancel()
	if err != nil {
		r.cfg.Logger.Warn("sink status failed", "error", err)
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

// settled reports whether every delivery of the sinks' ledgers settled
// as succeeded (nothing pending, unknown, dead-lettered or failed).
func (r *runner) settled(ctx context.Context) bool {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := sinkadmin.StatusOf(sctx, r.brokers, r.app, allStagesSinks)
	if err != nil {
		return false
	}
	for _, s := range st {
		if s.States["succeeded"] != s.Deliveries {
			return false
		}
	}
	return true
}

// parked reads what the sinks' ledgers hold parked where an operator sees
// it: deliveries unknown (the payload kept in the ledger entry) and
// dead-lettered (the payload of the dead letter), with their keys.
func (r *runner) parked(ctx context.Context) ([]verify.Effect, error) {
	var out []verify.Effect
	for _, sink := range allStagesSinks {
		err := r.admin(ctx, func(ctx context.Context) error {
			ds, _, err := sinkadmin.Ledger(ctx, r.brokers, r.app, sink)
			if err != nil {
				return err
			}
			dls, err := sinkadmin.DeadLetters(ctx, r.brokers, r.app, sink)
			if err != nil && !errors.Is(err, verify.ErrTopicNotFound) {
				return err
			}
			dead := map[string][]byte{}
			for _, dl := range dls {
				dead[dl.Key] = dl.Payload
			}
			for _, d := range ds {
				switch d.State {
				case sinkrunner.Unknown:
					out = append(out, verify.Effect{Key: d.Key, Payload: d.Payload})
				case sinkrunner.DeadLettered:
					out = append(out, verify.Effect{Key: d.Key, Payload: dead[d.Key]})
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, verify.ErrTopicNotFound) {
			return nil, fmt.Errorf("chaos: parked deliveries of %s: %w", sink, err)
		}
	}
	return out, nil
}

// checkAllStages reads the outputs and checks them with the effects the
// receiver applied so far (and the deliveries parked, when given).
func (r *runner) checkAllStages(ctx context.Context, truth gen.AllStagesTruth, parked ...verify.Effect) (verify.AllStagesReport, error) {
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := verify.ReadAllStages(vctx, r.brokers, r.prefix, r.app+"-rejected")
	if err != nil {
		return verify.AllStagesReport{}, fmt.Errorf("chaos: verify: %w", err)
	}
	out.Effects, out.Parked = r.hook.effects(), parked
	return verify.CheckAllStages(truth, out), nil
}

// operate does what an operator does with the sinks' parked deliveries,
// in a batch per sink and kind (`sinks unknown resolve`, `dlq redrive`):
// a delivery parked as unknown is resolved as succeeded when the receiver
// applied it and as retry otherwise; a dead letter is redriven. A command
// for a key is not written again within 15 seconds of the last one. It
// returns how many commands it wrote. A listing or a batch that fails (a
// broker down, a deadline under load) is logged and left for the next
// pass, as an operator would try again.
func (r *runner) operate(ctx context.Context) error {
	_, err := r.operatorCommands(ctx)
	return err
}

func (r *runner) operatorCommands(ctx context.Context) (int, error) {
	n := 0
	for _, sink := range allStagesSinks {
		var picked []string
		var cs []sinkadmin.Command
		err := r.admin(ctx, func(ctx context.Context) (err error) {
			picked = picked[:0]
			cs, err = sinkadmin.ResolveAll(ctx, r.brokers, r.app, sink, func(d sinkadmin.Delivery) string {
				as := sinks.ResolveRetry
				if r.hook.recv.Effects(d.Key) > 0 {
					as = sinks.ResolveSucceeded
				} else if d.Payload == nil {
					return "" // parked by a runner that kept no payload: not the run's to say
				}
				if !r.commandDue(sink, d.Key) {
					return ""
				}
				picked = append(picked, d.Key)
				return as
			})
			return err
		})
		n += len(cs)
		r.res.Resolved += len(cs)
		if r.noteBatch(ctx, sink, "resolve", picked, cs, err) != nil {
			return n, ctx.Err()
		}
		picked, cs = nil, nil
		err = r.admin(ctx, func(ctx context.Context) (err error) {
			picked = picked[:0]
			cs, err = sinkadmin.RedriveAll(ctx, r.brokers, r.app, sink, func(d sinkadmin.DeadLetter) bool {
				if !r.commandDue(sink, d.Key) {
					return false
				}
				picked = append(picked, d.Key)
				return true
			})
			return err
		})
		n += len(cs)
		r.res.Redriven += len(cs)
		if r.noteBatch(ctx, sink, "redrive", picked, cs, err) != nil {
			return n, ctx.Err()
		}
	}
	return n, nil
}

// noteBatch records a batch of commands: the keys written as resolved by
// the run, the keys picked but not written forgotten (the next pass tries
// them again). It returns the context's error when the run is ending.
func (r *runner) noteBatch(ctx context.Context, sink, what string, picked []string, cs []sinkadmin.Command, err error) error {
	written := map[string]bool{}
	for _, c := range cs {
		written[c.Key] = true
		if r.resolved == nil {
			r.resolved = map[string]bool{}
		}
		r.resolved[c.Key] = true
	}
	for _, k := range picked {
		if !written[k] {
			r.forget(sink, k)
		}
	}
	switch {
	case err == nil:
		r.res.CommandBatches++
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, verify.ErrTopicNotFound):
		// A sink with no ledger or dead letter yet has nothing parked.
	case errors.Is(err, sinkadmin.ErrState) || errors.Is(err, sinkadmin.ErrNotFound):
		r.res.CommandsRefused++
		r.cfg.Logger.Info(what+" batch refused; trying again at the next pass", "sink", sink, "keys", len(picked), "error", err)
	default:
		r.cfg.Logger.Warn(what+" batch failed; trying again at the next pass", "sink", sink, "keys", len(picked), "written", len(cs), "error", err)
	}
	return nil
}

// admin runs one sinkadmin call with a deadline of its own.
func (r *runner) admin(ctx context.Context, fn func(context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return fn(actx)
}

// forget drops the note of a command that was not written.
func (r *runner) forget(sink, key string) {
	delete(r.commanded, sink+"\x00"+key)
}

// commandDue reports whether a command for sink's key may be written now
// (none within the last 15 seconds: time for the runner to apply the last
// one), and notes it.
func (r *runner) commandDue(sink, key string) bool {
	k := sink + "\x00" + key
	if at, ok := r.commanded[k]; ok && time.Since(at) < 15*time.Second {
		return false
	}
	if r.commanded == nil {
		r.commanded = map[string]time.Time{}
	}
	r.commanded[k] = time.Now()
	return true
}

// operatorFault writes the operator's commands for what is parked now
// (a batch per sink and kind) and SIGKILLs a replica right after (the
// runner applying a command may be the one killed), starting it again
// after up to 2 s.
func (r *runner) operatorFault(ctx context.Context, f *Fault) error {
	n, err := r.operatorCommands(ctx)
	if err != nil {
		return err
	}
	r.res.OperatorFaults++
	rep := r.reps[r.rnd.IntN(len(r.reps))]
	rep.kill()
	down := time.Duration(r.rnd.Int64N(int64(2 * time.Second)))
	if err := sleep(ctx, down); err != nil {
		return err
	}
	f.Target, f.Note = rep.name, fmt.Sprintf("%d commands (resolve, redrive), then SIGKILL, restarted after %.1fs", n, down.Seconds())
	return rep.start()
}
