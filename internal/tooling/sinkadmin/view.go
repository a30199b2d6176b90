package sinkadmin

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// View follows one sink's ledger and dead-letter topic for a caller that
// looks at them again and again (a settling loop): each Refresh reads only
// the records written since the last one, where Ledger and DeadLetters
// read both topics whole, and the batch commands are checked against the
// state it holds.
type View struct {
	brokers   []string
	app, sink string
	extra     []kgo.Opt

	ledger   *ledgerFold
	ledgerAt map[int32]int64
	dls      []DeadLetter // in partition and offset order
	dlqAt    map[int32]int64
	ds       []Delivery // the ledger at the last Refresh, by key
	bad      int
}

// NewView returns a view of a sink's ledger and dead letters that has read
// nothing yet.
func NewView(brokers []string, app, sink string, extra ...kgo.Opt) *View {
	return &View{brokers: brokers, app: app, sink: sink, extra: extra, ledger: newLedgerFold(sink)}
}

// Refresh reads what was committed to the ledger and the dead-letter topic
// since the last Refresh. A topic that does not exist yet is read as empty.
// On an error the view keeps what it read before.
func (v *View) Refresh(ctx context.Context) error {
	recs, at, err := verify.ReadFrom(ctx, v.brokers, graph.LedgerTopic(outboxPrefix(v.app)+v.sink), v.ledgerAt, v.extra...)
	if err != nil && !errors.Is(err, verify.ErrTopicNotFound) {
		return fmt.Errorf("sinkadmin: ledger of %s: %w", v.sink, err)
	}
	if err == nil {
		v.ledger.add(recs)
		v.ledgerAt = at
	}
	dlRecs, dlAt, err := verify.ReadFrom(ctx, v.brokers, graph.DLQTopic(outboxPrefix(v.app)+v.sink), v.dlqAt, v.extra...)
	if err != nil && !errors.Is(err, verify.ErrTopicNotFound) {
		v.ds, v.bad = v.ledger.deliveries()
		return fmt.Errorf("sinkadmin: dead letters of %s: %w", v.sink, err)
	}
	if err == nil {
		v.dlqAt = dlAt
		for _, r := range dlRecs {
			v.dls = append(v.dls, deadLetter(v.sink, r))
		}
		sortDeadLetters(v.dls)
	}
	v.ds, v.bad = v.ledger.deliveries()
	withStates(v.dls, v.ds)
	return nil
}

// Deliveries returns the latest entry of every key as of the last Refresh,
// sorted by key, and how many keys' latest values did not decode.
func (v *View) Deliveries() ([]Delivery, int) { return v.ds, v.bad }

// DeadLetters returns the dead letters as of the last Refresh, in
// partition and offset order, with their deliveries' states.
func (v *View) DeadLetters() []DeadLetter { return v.dls }

// ResolveAll is ResolveAll on the view's ledger.
func (v *View) ResolveAll(ctx context.Context, as func(Delivery) string) ([]Command, error) {
	return writeResolves(ctx, v.brokers, v.app, v.sink, parkedUnknown(v.ds, as), nil, v.extra)
}

// RedriveAll is RedriveAll on the view's ledger and dead letters.
func (v *View) RedriveAll(ctx context.Context, pick func(DeadLetter) bool) ([]Command, error) {
	return writeRedrives(ctx, v.brokers, v.app, v.sink, deadLettered(v.ds, latestDeadLetters(v.dls), pick), v.extra)
}

// Status counts the view's ledger by state, with the records of the
// sink's outbox not read yet.
func (v *View) Status(ctx context.Context) (Status, error) {
	return status(ctx, v.brokers, v.app, v.sink, v.ds, v.bad, v.extra)
}
