package sinkrunner

import (
	"context"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
)

// command applies a command record of the outbox (wire.HeaderSinkCommand) to
// the ledger entry of the delivery it names, and says what follows. A
// command is read in outbox order on the partition that holds the
// delivery, by the runner that owns it, so it never races an attempt; it
// carries the delivery's payload and record key, so the delivery can be
// sent again after its own outbox record is gone.
//
//   - redrive: a dead-lettered delivery becomes pending with a fresh retry
//     budget and is delivered under its idempotency key.
//   - resolve: a delivery parked as unknown becomes succeeded (recorded,
//     never sent), failed (dead-lettered) or pending (sent again).
//
// A command read again after a restart (its offset is below the entry's
// Command, counted in the same outbox: not one deleted and created again
// since, whose offsets started again) was applied already: its delivery
// resumes where the runner
// that applied it stopped (delivered, or parked when an attempt was out
// to a sink that is not idempotent), and is skipped only once settled.
// A command the entry's state does not allow is skipped, with a warning.
// It returns false when the ledger could not be written.
func (r *Runner) command(ctx context.Context, p *partition, rec *kafka.Record, key string, e Entry) (Entry, Action, bool) {
	sk := p.sink
	cmd := header(rec.Headers, wire.HeaderSinkCommand)
	as := header(rec.Headers, wire.HeaderSinkResolveAs)
	log := r.log.With("sink", sk.name, "key", key, "command", cmd, "offset", rec.Offset)
	outbox := p.ss.outboxIDs[rec.Topic]
	if e.Command > rec.Offset && (e.CommandOutbox == "" || e.CommandOutbox == outbox) {
		if e.Settled() {
			log.Debug("command applied already")
			return e, Skip, true
		}
		next, act := e.Resume(sk.idempotent, r.cfg.Now())
		log.Info("command applied already, its delivery unsettled; resuming it", "state", e.State, "in_flight", e.InFlight, "next", act)
		return next, act, true
	}
	now := r.cfg.Now()
	was := e.State
	var next Entry
	var err error
	switch cmd {
	case wire.SinkCommandRedrive:
		next, err = e.Redrive(now)
	case wire.SinkCommandResolve:
		to := map[string]State{wire.SinkResolveSucceeded: Succeeded, wire.SinkResolveFailed: Failed, wire.SinkResolveRetry: Pending}[as]
		if to == "" {
			log.Warn("command ignored: unknown resolution", "as", as)
			return e, Skip, true
		}
		next, err = e.Resolve(to, now)
	default:
		log.Warn("command ignored: unknown command")
		return e, Skip, true
	}
	if err != nil {
		log.Warn("command ignored", "state", e.State, "error", err)
		return e, Skip, true
	}
	next.Command, next.CommandOutbox = rec.Offset+1, outbox
	next.RecordKey, next.Payload = nil, nil
	if was == Unknown {
		r.m.sink(sk.name).unknown.Add(-1)
		p.ss.unkSub(sk.name)
	}
	log.Info("command applied", "from", was, "to", next.State)
	switch next.State {
	case Succeeded:
		return next, Skip, r.record(ctx, p, key, next, nil)
	case Failed:
		return next, DeadLetter, true
	}
	return next, Deliver, true
}

// unkSub takes a resolved delivery off this session's unknown count.
func (ss *session) unkSub(name string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.unk[name]--
}
