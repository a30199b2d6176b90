package sinkrunner

import (
	"context"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// Ledgers is one runner's ledger writer over an in-memory Pebble, for
// tests that play two runners writing one ledger partition.
type Ledgers struct {
	l  *ledgers
	db *statestore.DB
	p  *kafka.Producer
}

// OpenLedgers opens a ledger writer with a producer of its own (and no
// transactional one: its writes carry no dead letters).
func OpenLedgers(c kafka.Client, t kafka.Timeouts) (*Ledgers, error) {
	db, err := statestore.Open("", statestore.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	p, err := kafka.NewProducer(c, t, "", true, 0)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Ledgers{l: newLedgers(db, p, nil, kafka.NewChangelogReader(c, t.WithDefaults().Transaction)), db: db, p: p}, nil
}

// Restore brings a ledger partition up to its changelog's end and returns
// how many stale entries (a zombie's, see Entry.Fence) it skipped.
func (l *Ledgers) Restore(ctx context.Context, ledger string, p int32) (int, error) {
	res, err := l.l.restore(ctx, ledger, p)
	return res.stale, err
}

// Fence records a fence for a ledger partition and returns its generation.
func (l *Ledgers) Fence(ctx context.Context, ledger string, p int32) (int64, error) {
	return l.l.fence(ctx, ledger, p)
}

// Put records an entry.
func (l *Ledgers) Put(ctx context.Context, ledger string, p int32, key string, e Entry) error {
	return l.l.put(ctx, &write{ledger: ledger, partition: p, key: key, entry: e})
}

// TakeOver does what a session does with a partition it is given:
// restore its ledger, record a fence, write again the entries whose
// latest changelog record the restore skipped. It returns the fence.
func (l *Ledgers) TakeOver(ctx context.Context, ledger string, p int32) (int64, error) {
	res, err := l.l.restore(ctx, ledger, p)
	if err != nil {
		return 0, err
	}
	g, err := l.l.fence(ctx, ledger, p)
	if err != nil {
		return 0, err
	}
	return g, l.l.repair(ctx, ledger, p, res.staleKeys, g)
}

// Delete records an entry's expiry (a tombstone).
func (l *Ledgers) Delete(ctx context.Context, ledger string, p int32, key string) error {
	return l.l.put(ctx, &write{ledger: ledger, partition: p, key: key, delete: true})
}

// Get reads an entry from Pebble.
func (l *Ledgers) Get(ledger string, p int32, key string) (Entry, error) {
	return l.l.get(ledger, p, key)
}

// Close stops the writer and closes its producer and Pebble.
func (l *Ledgers) Close() {
	l.l.close()
	l.p.Close()
	l.db.Close()
}
