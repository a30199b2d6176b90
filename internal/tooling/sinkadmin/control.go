package sinkadmin

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/sinks"
)

// ErrNotFound is returned (wrapped) when a sink has no dead letter or
// ledger entry with the idempotency key asked for. Not retryable.
var ErrNotFound = errors.New("sinkadmin: no such delivery")

// ErrState is returned (wrapped) when a delivery's ledger state does not
// allow the command (redrive needs dead-lettered, resolve needs unknown).
// Not retryable.
var ErrState = errors.New("sinkadmin: delivery not in a state the command allows")

// Command is a command record written to a sink's outbox.
type Command struct {
	Sink      string `json:"sink"`
	Key       string `json:"idempotency_key"`
	Command   string `json:"command"`
	As        string `json:"as,omitempty"`
	Outbox    string `json:"outbox"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Commands are written in batches: one read of the sink's ledger (and of
// its dead-letter topic, for a redrive) checks every delivery of the
// batch, then one produce writes a command record per delivery, each to
// the outbox partition that holds its delivery. A batch is checked whole:
// when any delivery of it does not allow its command, nothing is written.
// The records are the same as a single command's, so each is applied by
// the runner that owns its partition, in order, and survives a crash of
// that runner as a single command does.

// Redrive asks the runner to deliver a dead-lettered delivery again under
// the same idempotency key: it writes a redrive command, with the dead
// letter's payload and record key, to the outbox partition the delivery
// came from. The runner applies it once (a redrive of a delivery that is
// no longer dead-lettered is ignored).
func Redrive(ctx context.Context, brokers []string, app, sink, key string, extra ...kgo.Opt) (Command, error) {
	cs, err := RedriveKeys(ctx, brokers, app, sink, []string{key}, extra...)
	if err != nil {
		return Command{}, err
	}
	return cs[0], nil
}

// RedriveKeys redrives the dead-lettered deliveries with the given keys,
// as Redrive does each, in one batch: nothing is written when any of them
// is not dead-lettered or has no dead letter.
func RedriveKeys(ctx context.Context, brokers []string, app, sink string, keys []string, extra ...kgo.Opt) ([]Command, error) {
	_, byKey, dls, err := ledgerAndDeadLetters(ctx, brokers, app, sink, extra)
	if err != nil {
		return nil, err
	}
	var rs []redrive
	var errs []error
	for _, k := range unique(keys) {
		d, ok := byKey[k]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%w: %s has no ledger entry %s", ErrNotFound, sink, k))
		case d.State != sinkrunner.DeadLettered:
			errs = append(errs, fmt.Errorf("%w: %s is %s, not dead-lettered", ErrState, k, d.State))
		case dls[k] == nil:
			errs = append(errs, fmt.Errorf("%w: %s has no dead letter of %s", ErrNotFound, sink, k))
		default:
			rs = append(rs, redrive{d, dls[k]})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return writeRedrives(ctx, brokers, app, sink, rs, extra)
}

// RedriveAll redrives every dead letter of a sink whose delivery is still
// dead-lettered and for which pick returns true (nil picks all), in one
// batch; dead letters of deliveries redriven before are left out. It
// returns the commands written, none when nothing was picked.
func RedriveAll(ctx context.Context, brokers []string, app, sink string, pick func(DeadLetter) bool, extra ...kgo.Opt) ([]Command, error) {
	ds, _, dls, err := ledgerAndDeadLetters(ctx, brokers, app, sink, extra)
	if err != nil {
		return nil, err
	}
	return writeRedrives(ctx, brokers, app, sink, deadLettered(ds, dls, pick), extra)
}

// deadLettered picks the deliveries still dead-lettered that have a dead
// letter (dls: the latest per key) for which pick returns true (nil picks
// all).
func deadLettered(ds []Delivery, dls map[string]*DeadLetter, pick func(DeadLetter) bool) []redrive {
	var rs []redrive
	for _, d := range ds {
		dl := dls[d.Key]
		if d.State != sinkrunner.DeadLettered || dl == nil || pick != nil && !pick(*dl) {
			continue
		}
		rs = append(rs, redrive{d, dl})
	}
	return rs
}

// redrive is one delivery of a redrive batch and its latest dead letter.
type redrive struct {
	d  Delivery
	dl *DeadLetter
}

// ledgerAndDeadLetters reads a sink's ledger (in key order and by key)
// and its dead-letter topic (the latest dead letter per key; none when the
// topic does not exist yet), once each.
func ledgerAndDeadLetters(ctx context.Context, brokers []string, app, sink string, extra []kgo.Opt) ([]Delivery, map[string]Delivery, map[string]*DeadLetter, error) {
	ds, byKey, err := ledgerByKey(ctx, brokers, app, sink, extra)
	if err != nil {
		return nil, nil, nil, err
	}
	all, err := readDeadLetters(ctx, brokers, app, sink, extra)
	if err != nil && !errors.Is(err, verify.ErrTopicNotFound) {
		return nil, nil, nil, err
	}
	withStates(all, ds)
	return ds, byKey, latestDeadLetters(all), nil
}

// latestDeadLetters maps each key to its latest dead letter (all in
// partition and offset order).
func latestDeadLetters(all []DeadLetter) map[string]*DeadLetter {
	dls := make(map[string]*DeadLetter, len(all))
	for i := range all {
		dls[all[i].Key] = &all[i]
	}
	return dls
}

func writeRedrives(ctx context.Context, brokers []string, app, sink string, rs []redrive, extra []kgo.Opt) ([]Command, error) {
	out := make([]outgoing, 0, len(rs))
	for _, r := range rs {
		out = append(out, outgoing{
			c:         Command{Sink: sink, Key: r.d.Key, Command: wire.SinkCommandRedrive, Outbox: outboxPrefix(app) + sink, Partition: r.d.Partition},
			recordKey: r.dl.RecordKey, payload: r.dl.Payload, source: r.dl.Source,
		})
	}
	return send(ctx, brokers, out, extra)
}

// Resolve settles a delivery parked as unknown: as wire.SinkResolveSucceeded
// (never sent), wire.SinkResolveFailed (dead-lettered) or wire.SinkResolveRetry
// (sent again under the same key). It writes a resolve command to the
// delivery's outbox partition; the runner applies it once.
func Resolve(ctx context.Context, brokers []string, app, sink, key, as string, extra ...kgo.Opt) (Command, error) {
	cs, err := ResolveKeys(ctx, brokers, app, sink, []string{key}, as, extra...)
	if err != nil {
		return Command{}, err
	}
	return cs[0], nil
}

// ResolveKeys resolves the deliveries with the given keys, each as
// Resolve does, in one batch: nothing is written when any of them is not
// parked as unknown (or, for failed and retry, was parked without its
// payload).
func ResolveKeys(ctx context.Context, brokers []string, app, sink string, keys []string, as string, extra ...kgo.Opt) ([]Command, error) {
	if err := checkAs(as); err != nil {
		return nil, err
	}
	_, byKey, err := ledgerByKey(ctx, brokers, app, sink, extra)
	if err != nil {
		return nil, err
	}
	var rs []resolution
	var errs []error
	for _, k := range unique(keys) {
		d, ok := byKey[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: %s has no ledger entry %s", ErrNotFound, sink, k))
			continue
		}
		rs = append(rs, resolution{d, as})
	}
	return writeResolves(ctx, brokers, app, sink, rs, errs, extra)
}

// ResolveAll resolves, in one batch, every delivery of a sink parked as
// unknown for which as returns an outcome (wire.SinkResolveSucceeded,
// SinkResolveFailed or SinkResolveRetry; "" leaves the delivery parked). Nothing
// is written when an outcome is not allowed for its delivery. It returns
// the commands written, none when nothing is parked.
func ResolveAll(ctx context.Context, brokers []string, app, sink string, as func(Delivery) string, extra ...kgo.Opt) ([]Command, error) {
	ds, _, err := ledgerByKey(ctx, brokers, app, sink, extra)
	if err != nil {
		return nil, err
	}
	return writeResolves(ctx, brokers, app, sink, parkedUnknown(ds, as), nil, extra)
}

// parkedUnknown picks the deliveries parked as unknown for which as
// returns an outcome.
func parkedUnknown(ds []Delivery, as func(Delivery) string) []resolution {
	var rs []resolution
	for _, d := range ds {
		if d.State != sinkrunner.Unknown {
			continue
		}
		if a := as(d); a != "" {
			rs = append(rs, resolution{d, a})
		}
	}
	return rs
}

// resolution is one delivery of a resolve batch and its outcome.
type resolution struct {
	d  Delivery
	as string
}

// checkAs refuses an outcome a resolve does not know.
func checkAs(as string) error {
	switch as {
	case wire.SinkResolveSucceeded, wire.SinkResolveFailed, wire.SinkResolveRetry:
		return nil
	}
	return fmt.Errorf("sinkadmin: resolve as %q: want %s, %s or %s", as, wire.SinkResolveSucceeded, wire.SinkResolveFailed, wire.SinkResolveRetry)
}

// writeResolves checks every resolution of a batch (errs holds what was
// refused before) and writes the batch when none is refused.
func writeResolves(ctx context.Context, brokers []string, app, sink string, rs []resolution, errs []error, extra []kgo.Opt) ([]Command, error) {
	out := make([]outgoing, 0, len(rs))
	for _, r := range rs {
		d := r.d
		switch err := checkAs(r.as); {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", d.Key, err))
		case d.State != sinkrunner.Unknown:
			errs = append(errs, fmt.Errorf("%w: %s is %s, not unknown", ErrState, d.Key, d.State))
		case r.as != wire.SinkResolveSucceeded && d.Payload == nil:
			errs = append(errs, fmt.Errorf("%w: %s was parked without its payload (by an older runner); only --as %s is possible", ErrState, d.Key, wire.SinkResolveSucceeded))
		default:
			out = append(out, outgoing{
				c:         Command{Sink: sink, Key: d.Key, Command: wire.SinkCommandResolve, As: r.as, Outbox: outboxPrefix(app) + sink, Partition: d.Partition},
				recordKey: d.RecordKey, payload: d.Payload, source: d.Source,
			})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return send(ctx, brokers, out, extra)
}

// ledgerByKey reads the ledger of a sink once: its deliveries in key
// order, and by key.
func ledgerByKey(ctx context.Context, brokers []string, app, sink string, extra []kgo.Opt) ([]Delivery, map[string]Delivery, error) {
	ds, _, err := Ledger(ctx, brokers, app, sink, extra...)
	if err != nil {
		return nil, nil, err
	}
	byKey := make(map[string]Delivery, len(ds))
	for _, d := range ds {
		byKey[d.Key] = d
	}
	return ds, byKey, nil
}

// unique drops repeated keys, keeping the first of each.
func unique(keys []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// outgoing is one command of a batch with the delivery it carries.
type outgoing struct {
	c         Command
	recordKey []byte
	payload   []byte
	source    string
}

// send writes the outbox records of a batch of commands (each the
// delivery's record key, payload, idempotency key and lineage, and the
// command) in one produce, acknowledged by every in-sync replica, and
// returns the commands with their offsets. When some records could not be
// written it returns those that were, and the error.
func send(ctx context.Context, brokers []string, out []outgoing, extra []kgo.Opt) ([]Command, error) {
	if len(out) == 0 {
		return nil, nil
	}
	recs := make([]*kgo.Record, 0, len(out))
	for _, o := range out {
		c := o.c
		hs := []kgo.RecordHeader{
			{Key: sinks.HeaderIdempotencyKey, Value: []byte(c.Key)},
			{Key: wire.HeaderSinkCommand, Value: []byte(c.Command)},
		}
		if c.As != "" {
			hs = append(hs, kgo.RecordHeader{Key: wire.HeaderSinkResolveAs, Value: []byte(c.As)})
		}
		if o.source != "" {
			hs = append(hs, kgo.RecordHeader{Key: wire.HeaderSource, Value: []byte(o.source)})
		}
		recs = append(recs, &kgo.Record{Topic: c.Outbox, Partition: c.Partition, Key: o.recordKey, Value: o.payload, Headers: hs})
	}
	opts := append(clientcfg.Options(brokers, "onceflow-sinks", nil), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("sinkadmin: client: %w", err)
	}
	defer cl.Close()
	// The results come in the order the records were acknowledged.
	failed := map[*kgo.Record]error{}
	for _, res := range cl.ProduceSync(ctx, recs...) {
		if res.Err != nil {
			failed[res.Record] = res.Err
		}
	}
	written := make([]Command, 0, len(out))
	var errs []error
	for i, rec := range recs {
		c := out[i].c
		if err := failed[rec]; err != nil {
			errs = append(errs, fmt.Errorf("sinkadmin: write %s command of %s to %s/%d: %w", c.Command, c.Key, c.Outbox, c.Partition, err))
			continue
		}
		c.Offset = rec.Offset
		written = append(written, c)
	}
	return written, errors.Join(errs...)
}
