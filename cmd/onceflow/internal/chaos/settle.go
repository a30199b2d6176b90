package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

// sinkState is one sink's ledger as the settling sees it: the deliveries
// parked (unknown, dead-lettered) with their payloads when asked for,
// and those not settled otherwise.
type sinkState struct {
	sink                  string
	unknown, deadLettered int
	// unsettled counts deliveries pending or failed, but for pending
	// ones whose effect the receiver applied (pendingApplied).
	unsettled      int
	pendingApplied int
	examples       []string // of pendingApplied
	parked         []verify.Effect
}

// readLedgers brings each sink's view of its ledger and dead-letter
// topic up to date (reading only what was written since the last call)
// and counts what it holds.
//
// A pending entry whose effect the receiver applied is counted apart: it
// is the mark of an attempt in flight that reached the ledger's changelog
// after the delivery had succeeded (a zombie runner records its attempt
// before it learns that the partition is another's, and then does not
// send it), not a delivery still to settle.
func (r *runner) readLedgers(ctx context.Context) ([]sinkState, error) {
	if r.views == nil {
		r.views = map[string]*sinkadmin.View{}
		for _, sink := range allStagesSinks {
			r.views[sink] = sinkadmin.NewView(r.brokers, r.app, sink)
		}
	}
	var out []sinkState
	for _, sink := range allStagesSinks {
		st := sinkState{sink: sink}
		v := r.views[sink]
		if err := r.admin(ctx, v.Refresh); err != nil {
			return nil, fmt.Errorf("chaos: ledger of %s: %w", sink, err)
		}
		ds, _ := v.Deliveries()
		dls := v.DeadLetters()
		dead := map[string][]byte{}
		for _, dl := range dls {
			dead[dl.Key] = dl.Payload
		}
		for _, d := range ds {
			switch {
			case d.State == sinkrunner.Succeeded:
			case d.State == sinkrunner.Unknown:
				st.unknown++
				st.parked = append(st.parked, verify.Effect{Key: d.Key, Payload: d.Payload})
			case d.State == sinkrunner.DeadLettered:
				st.deadLettered++
				st.parked = append(st.parked, verify.Effect{Key: d.Key, Payload: dead[d.Key]})
			case d.State == sinkrunner.Pending && r.hook.recv.Effects(d.Key) > 0:
				st.pendingApplied++
				if len(st.examples) < 5 {
					st.examples = append(st.examples, fmt.Sprintf("%s (attempts %d, in flight %t, updated %s; applied by %v)",
						d.Key, d.Attempts, d.InFlight, d.Updated.UTC().Format(time.RFC3339Nano), r.hook.senders(d.Key)))
				}
			default:
				st.unsettled++
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// notePendingApplied copies the pending entries whose effect was applied
// into the result.
func (r *runner) notePendingApplied(sts []sinkState) {
	r.res.PendingApplied, r.res.PendingAppliedExamples = 0, nil
	for _, st := range sts {
		r.res.PendingApplied += st.pendingApplied
		r.res.PendingAppliedExamples = append(r.res.PendingAppliedExamples, st.examples...)
	}
}

// settleBacklog is the outbox backlog above which a settling pass only
// samples it: the runners are busy delivering, and commands written now
// would wait behind the backlog anyway, so the ledgers are read (and what
// is parked commanded) only every settleLedgerEvery.
const (
	settleBacklog     = 2000
	settleLedgerEvery = 30 * time.Second
)

// settle waits, after all input was committed, until every output,
// window and effect is there and every delivery settled, resolving and
// redriving what is parked in batches, at most the drain timeout. A pass
// samples the outboxes' backlog (and the receiver's effects), reads each
// sink's ledger once and writes the commands it calls for; the outputs
// (the costly read) are read only once the ledgers are clean and the
// runners have read their outboxes.
func (r *runner) settle(ctx context.Context, truth gen.AllStagesTruth) error {
	start := time.Now()
	deadline := start.Add(r.cfg.DrainTimeout)
	r.hook.recv.Heal()
	fmt.Fprintf(r.cfg.Progress, "receiver healed: no more injected refusals or dropped answers while parked deliveries settle\n")
	var ledgersRead time.Time
	for {
		if err := r.restartExited(); err != nil {
			return err
		}
		unread, uerr := r.outboxUnread(ctx)
		r.res.SettleSamples = append(r.res.SettleSamples, SettleSample{At: time.Since(start).Seconds(),
			Effects: r.hook.recv.Stats().Effects, Unread: unread})
		if uerr == nil && unread > settleBacklog && time.Since(ledgersRead) < settleLedgerEvery {
			if time.Now().After(deadline) {
				break
			}
			if err := sleep(ctx, 5*time.Second); err != nil {
				return err
			}
			continue
		}
		ledgersRead = time.Now()
		sts, err := r.readLedgers(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			// Read again at the next pass (a broker slow to answer).
			r.cfg.Logger.Warn("reading the ledgers failed; trying again", "error", err)
		default:
			r.notePendingApplied(sts)
			if _, err := r.operatorCommands(ctx, sts); err != nil {
				return err
			}
			if clean(sts) && uerr == nil && unread == 0 {
				rep, err := r.checkAllStages(ctx, truth)
				if err != nil && ctx.Err() != nil {
					return err
				}
				if err != nil {
					r.cfg.Logger.Warn("reading the outputs failed; trying again", "error", err)
				} else if rep.Complete() {
					r.res.Settled = true
				}
			}
		}
		if r.res.Settled || time.Now().After(deadline) {
			break
		}
		if err := sleep(ctx, 3*time.Second); err != nil {
			return err
		}
	}
	r.res.SettleSeconds = time.Since(start).Seconds()
	if r.res.Settled {
		fmt.Fprintf(r.cfg.Progress, "settled %.1fs after all input was committed: every output, window and effect there, every delivery succeeded\n", r.res.SettleSeconds)
	} else {
		fmt.Fprintf(r.cfg.Progress, "not settled when the drain timeout ended, %.1fs after all input was committed\n", r.res.SettleSeconds)
	}
	return nil
}

// clean reports whether no delivery is parked or unsettled.
func clean(sts []sinkState) bool {
	for _, st := range sts {
		if st.unknown+st.deadLettered+st.unsettled > 0 {
			return false
		}
	}
	return true
}

// outboxUnread counts the records of the sinks' outboxes the runners'
// group has not read yet (delivery requests and commands).
func (r *runner) outboxUnread(ctx context.Context) (int64, error) {
	var n int64
	for _, sink := range allStagesSinks {
		var p verify.Progress
		err := r.admin(ctx, func(ctx context.Context) (err error) {
			p, err = verify.GroupProgress(ctx, r.brokers, sinkadmin.RunnerGroup(r.app), sinkadmin.Outbox(r.app, sink))
			return err
		})
		if err != nil {
			return 0, err
		}
		n += p.Lag
	}
	return n, nil
}

// operatorCommands does what an operator does with the sinks' parked
// deliveries, a batch per sink and kind (`sinks unknown resolve`, `dlq
// redrive --all`): a delivery parked as unknown is resolved as succeeded
// when the receiver applied it and as retry otherwise; a dead letter is
// redriven. A batch is written for a sink whose state (sts, as
// readLedgers left the views) has such deliveries. A key is not commanded
// again until the runners' group has read past its last command. It
// returns how many commands it wrote. A batch that fails (a broker down,
// a deadline under load) is logged and left for the next pass, as an
// operator would try again.
func (r *runner) operatorCommands(ctx context.Context, sts []sinkState) (int, error) {
	var read kadm.OffsetResponses
	err := r.admin(ctx, func(ctx context.Context) (err error) {
		read, err = r.adm.FetchOffsets(ctx, sinkadmin.RunnerGroup(r.app))
		return err
	})
	if err != nil {
		r.cfg.Logger.Debug("fetch the sink runners' offsets failed", "error", err)
	}
	n := 0
	for i, sink := range allStagesSinks {
		v := r.views[sink]
		if sts[i].unknown > 0 {
			var cs []sinkadmin.Command
			err := r.admin(ctx, func(ctx context.Context) (err error) {
				cs, err = v.ResolveAll(ctx, func(d sinkadmin.Delivery) string {
					if !r.commandDue(d.Key, read) {
						return ""
					}
					if r.hook.recv.Effects(d.Key) > 0 {
						return wire.SinkResolveSucceeded
					}
					if d.Payload == nil {
						return "" // parked by a runner that kept no payload: not the run's to say
					}
					return wire.SinkResolveRetry
				})
				return err
			})
			n += len(cs)
			r.res.Resolved += len(cs)
			if err := r.noteBatch(ctx, sink, "resolve", cs, err); err != nil {
				return n, err
			}
		}
		if sts[i].deadLettered > 0 {
			var cs []sinkadmin.Command
			err := r.admin(ctx, func(ctx context.Context) (err error) {
				cs, err = v.RedriveAll(ctx, func(d sinkadmin.DeadLetter) bool { return r.commandDue(d.Key, read) })
				return err
			})
			n += len(cs)
			r.res.Redriven += len(cs)
			if err := r.noteBatch(ctx, sink, "redrive", cs, err); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// commandDue reports whether a command for key may be written: none was
// written before, or the runners' group has read past the last one (read:
// its committed offsets), which was applied then and left the delivery
// parked again. A command still waiting in the outbox is not written
// twice.
func (r *runner) commandDue(key string, read kadm.OffsetResponses) bool {
	c, ok := r.commanded[key]
	if !ok {
		return true
	}
	o, ok := read.Lookup(c.Outbox, c.Partition)
	return ok && o.Err == nil && o.At > c.Offset
}

// uncommanded lists the keys of parked deliveries the run wrote no
// command for: parked visibly, but never resolved by the run's settling.
func (r *runner) uncommanded(parked []verify.Effect) []string {
	var never []string
	for _, p := range parked {
		if _, ok := r.commanded[p.Key]; !ok {
			never = append(never, p.Key)
		}
	}
	return never
}

// noteBatch records a batch of commands: the keys written, with their
// outbox places. It returns the context's error when the run is ending.
func (r *runner) noteBatch(ctx context.Context, sink, what string, cs []sinkadmin.Command, err error) error {
	if r.commanded == nil {
		r.commanded = map[string]sinkadmin.Command{}
	}
	for _, c := range cs {
		r.commanded[c.Key] = c
	}
	switch {
	case err == nil:
		if len(cs) > 0 {
			r.res.CommandBatches++
		}
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, verify.ErrTopicNotFound):
		// A sink with no ledger or dead letter yet has nothing parked.
	case errors.Is(err, sinkadmin.ErrState) || errors.Is(err, sinkadmin.ErrNotFound):
		r.res.CommandsRefused++
		r.cfg.Logger.Info(what+" batch refused; trying again at the next pass", "sink", sink, "error", err)
	default:
		r.cfg.Logger.Warn(what+" batch failed; trying again at the next pass", "sink", sink, "written", len(cs), "error", err)
	}
	return nil
}

// adminBudget bounds one sinkadmin call: a view's first read of a sink's
// ledger, a million entries in a long run, is the longest.
const adminBudget = 3 * time.Minute

// admin runs one sinkadmin call with a deadline of its own.
func (r *runner) admin(ctx context.Context, fn func(context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, adminBudget)
	defer cancel()
	return fn(actx)
}
