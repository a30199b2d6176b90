package sinkadmin

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/clientcfg"
	"github.com/onceflow/onceflow/internal/sinkrunner"
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

// Redrive asks the runner to deliver a dead-lettered delivery again under
// the same idempotency key: it writes a redrive command, with the dead
// letter's payload and record key, to the outbox partition the delivery
// came from. The runner applies it once (a redrive of a delivery that is
// no longer dead-lettered is ignored).
func Redrive(ctx context.Context, brokers []string, app, sink, key string, extra ...kgo.Opt) (Command, error) {
	e, part, err := entry(ctx, brokers, app, sink, key, extra)
	if err != nil {
		return Command{}, err
	}
	if e.State != sinkrunner.DeadLettered {
		return Command{}, fmt.Errorf("%w: %s is %s, not dead-lettered", ErrState, key, e.State)
	}
	dls, err := DeadLetters(ctx, brokers, app, sink, extra...)
	if err != nil {
		return Command{}, err
	}
	var dl *DeadLetter
	for i := range dls {
		if dls[i].Key == key {
			dl = &dls[i]
		}
	}
	if dl == nil {
		return Command{}, fmt.Errorf("%w: %s has no dead letter of %s", ErrNotFound, sink, key)
	}
	c := Command{Sink: sink, Key: key, Command: sinks.CommandRedrive, Outbox: outboxPrefix(app) + sink, Partition: part}
	return send(ctx, brokers, c, dl.RecordKey, dl.Payload, dl.Source, extra)
}

// Resolve settles a delivery parked as unknown: as sinks.ResolveSucceeded
// (never sent), sinks.ResolveFailed (dead-lettered) or sinks.ResolveRetry
// (sent again under the same key). It writes a resolve command to the
// delivery's outbox partition; the runner applies it once.
func Resolve(ctx context.Context, brokers []string, app, sink, key, as string, extra ...kgo.Opt) (Command, error) {
	switch as {
	case sinks.ResolveSucceeded, sinks.ResolveFailed, sinks.ResolveRetry:
	default:
		return Command{}, fmt.Errorf("sinkadmin: resolve as %q: want %s, %s or %s", as, sinks.ResolveSucceeded, sinks.ResolveFailed, sinks.ResolveRetry)
	}
	e, part, err := entry(ctx, brokers, app, sink, key, extra)
	if err != nil {
		return Command{}, err
	}
	if e.State != sinkrunner.Unknown {
		return Command{}, fmt.Errorf("%w: %s is %s, not unknown", ErrState, key, e.State)
	}
	if as != sinks.ResolveSucceeded && e.Payload == nil {
		return Command{}, fmt.Errorf("%w: %s was parked without its payload (by an older runner); only --as %s is possible", ErrState, key, sinks.ResolveSucceeded)
	}
	c := Command{Sink: sink, Key: key, Command: sinks.CommandResolve, As: as, Outbox: outboxPrefix(app) + sink, Partition: part}
	return send(ctx, brokers, c, e.RecordKey, e.Payload, e.Source, extra)
}

// entry reads the ledger entry of one delivery and its partition.
func entry(ctx context.Context, brokers []string, app, sink, key string, extra []kgo.Opt) (sinkrunner.Entry, int32, error) {
	ds, _, err := Ledger(ctx, brokers, app, sink, extra...)
	if err != nil {
		return sinkrunner.Entry{}, 0, err
	}
	for _, d := range ds {
		if d.Key == key {
			return d.Entry, d.Partition, nil
		}
	}
	return sinkrunner.Entry{}, 0, fmt.Errorf("%w: %s has no ledger entry %s", ErrNotFound, sink, key)
}

// send writes the outbox record of a command (the delivery's record key,
// payload, idempotency key and lineage, and the command), acknowledged by
// every in-sync replica, and returns c with its offset.
func send(ctx context.Context, brokers []string, c Command, recordKey, payload []byte, source string, extra []kgo.Opt) (Command, error) {
	hs := []kgo.RecordHeader{
		{Key: sinks.HeaderIdempotencyKey, Value: []byte(c.Key)},
		{Key: sinks.HeaderCommand, Value: []byte(c.Command)},
	}
	if c.As != "" {
		hs = append(hs, kgo.RecordHeader{Key: sinks.HeaderResolveAs, Value: []byte(c.As)})
	}
	if source != "" {
		hs = append(hs, kgo.RecordHeader{Key: sinks.HeaderSource, Value: []byte(source)})
	}
	rec := &kgo.Record{Topic: c.Outbox, Partition: c.Partition, Key: recordKey, Value: payload, Headers: hs}
	opts := append(clientcfg.Options(brokers, "onceflow-sinks", nil), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return c, fmt.Errorf("sinkadmin: client: %w", err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return c, fmt.Errorf("sinkadmin: write command to %s/%d: %w", c.Outbox, c.Partition, err)
	}
	c.Offset = rec.Offset
	return c, nil
}
