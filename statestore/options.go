package statestore

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
)

// Defaults of Options fields left zero. State is read point by point,
// mostly keys just written or never seen, so the block cache must hold the
// tables' index, filter and recent data blocks: on the orders workload on
// real Kafka these sizes gave 1.6 times the exactly-once throughput of 64
// and 32 MiB, for 5 % more memory.
const (
	defaultCacheSize    = 256 << 20
	defaultMemTableSize = 64 << 20
)

// Options configures Open. The zero value is a valid configuration.
type Options struct {
	// Logger receives the store's and Pebble's log lines. Default (nil): a
	// null logger.
	Logger hclog.Logger

	// NoSync turns off the fsync of the write-ahead log on Txn.Apply,
	// Restore and Wipe. Default (false): every one of them is durable when it
	// returns. Turning it off is still crash-safe, because a changelog offset
	// is always written in the same batch as the data it covers: a crash
	// loses a suffix of applied batches, data and offsets together, and
	// restore replays them from the changelog; it only makes that restore
	// longer. Note that Pebble buffers an unsynced write-ahead log in the
	// process, so even a process crash (not only a machine crash) can lose
	// the batches applied since the last sync or full 32 KiB log block.
	NoSync bool

	// CacheSize is the size of Pebble's block cache in bytes. Default (0):
	// 256 MiB.
	CacheSize int64

	// MemTableSize is the size of one Pebble memtable in bytes; up to two
	// are held in memory, and the write-ahead log on disk holds the
	// batches of the memtables not flushed yet (up to about twice this).
	// A Txn or Restore batch of more than half of it is applied as a
	// memtable of its own, which forces a flush: keep it above twice the
	// largest transaction. Default (0): 64 MiB.
	MemTableSize int64

	// ReadCacheEntries bounds the cache of committed values that Txn reads
	// go through (keys recently read and found, and keys recently written):
	// between one and two times this many entries are kept. Default (0):
	// 65,536; negative: no cache.
	ReadCacheEntries int

	// DedupStores names the stores that hold DedupEntry values. For them,
	// every write (Txn.Put, Txn.Delete, Txn.PutDedup, Txn.ExpireDedup and
	// Restore) keeps the local expiry index in step, and a Put whose value
	// is not an EncodeDedup value is refused. The dedup helpers refuse
	// stores not listed here. Default (nil): none.
	DedupStores []string
}

// Validate reports every problem in o at once, each wrapping
// ErrInvalidOptions.
func (o Options) Validate() error {
	var errs []error
	if o.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("%w: CacheSize %d is negative", ErrInvalidOptions, o.CacheSize))
	}
	if o.MemTableSize < 0 || o.MemTableSize >= 4<<30 {
		errs = append(errs, fmt.Errorf("%w: MemTableSize %d is not in [0, 4 GiB)", ErrInvalidOptions, o.MemTableSize))
	}
	seen := make(map[string]bool, len(o.DedupStores))
	for _, s := range o.DedupStores {
		if err := validateStore(s); err != nil {
			errs = append(errs, fmt.Errorf("%w: DedupStores: %w", ErrInvalidOptions, err))
			continue
		}
		if seen[s] {
			errs = append(errs, fmt.Errorf("%w: DedupStores: %q listed twice", ErrInvalidOptions, s))
		}
		seen[s] = true
	}
	return errors.Join(errs...)
}

// WithDefaults returns o with the sizes left zero set to the defaults Open
// uses.
func (o Options) WithDefaults() Options {
	if o.CacheSize == 0 {
		o.CacheSize = defaultCacheSize
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = defaultMemTableSize
	}
	if o.ReadCacheEntries == 0 {
		o.ReadCacheEntries = defaultReadCacheEntries
	}
	return o
}
