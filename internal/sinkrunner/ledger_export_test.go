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

// Restore brings a ledger partition up to its changelog's end.
func (l *Ledgers) Restore(ctx context.Context, ledger string, p int32) error {
	_, err := l.l.restore(ctx, ledger, p)
	return err
}

// Put records an entry.
func (l *Ledgers) Put(ctx context.Context, ledger string, p int32, key string, e Entry) error {
	return l.l.put(ctx, &write{ledger: ledger, partition: p, key: key, entry: e})
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
