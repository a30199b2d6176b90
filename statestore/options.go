package statestore

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
)

// Defaults of Options fields left zero. A replica's state is read point by
// point, mostly for keys it has just written or never seen; when the block
// cache cannot hold the tables' index, filter and recent data blocks, every
// such read goes to the file. Over 300,000 orders events (four stores, six
// tasks) on real Kafka, raising the cache from 64 to 256 MiB and the
// memtable from 32 to 64 MiB took exactly-once throughput from 6.6k and 7.0k
// to 10.6k and 11.5k records/s and CPU from 139 and 148 to 94 and 97 s per
// million records, at a peak RSS of 348 MB instead of 330 MB. The cache
// made most of the difference (10.5k alone; the memtable alone 8.7k).
const (
	DefaultCacheSize    = 256 << 20
	DefaultMemTableSize = 64 << 20
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
	// DefaultCacheSize.
	CacheSize int64

	// MemTableSize is the size of one Pebble memtable in bytes; up to two
	// are held in memory, and the write-ahead log on disk holds the
	// batches of the memtables not flushed yet (up to about twice this).
	// A Txn or Restore batch of more than half of it is applied as a
	// memtable of its own, which forces a flush: keep it above twice the
	// largest transaction. Default (0): DefaultMemTableSize.
	MemTableSize int64

	// ReadCacheEntries bounds the cache of committed values that Txn reads
	// go through (keys recently read and found, and keys recently written):
	// between one and two times this many entries are kept. Default (0):
	// DefaultReadCacheEntries; negative: no cache.
	ReadCacheEntries int

	// DedupStores names the stores that hold DedupEntry values. For them,
	// every write (Txn.Put, Txn.Delete, Txn.PutDedup, Txn.ExpireDedup and
	// Restore) keeps the local expiry index in step, and a Put whose value
	// does not decode with DecodeDedup is refused. The dedup helpers refuse
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
