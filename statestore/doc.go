// Package statestore is the local state of one onceflow replica: a single
// Pebble database (one write-ahead log, one block cache) holding every
// key-value store of every task the replica runs, the changelog offset each
// of them includes, and the expiry index of the dedup stores.
//
// It is what the runtime keeps state in, not an interface for topology
// code: a topology's stages reach their stores through package topology,
// and a DB is opened and driven by a replica (internal/engine), by the test
// driver (topology/topologytest) and by the sink runner for its delivery
// ledgers (internal/sinkrunner). Values are opaque bytes its callers
// encode (a stage's serde, a ledger entry); the one value format of this
// package is the dedup entry (DedupEntry, EncodeDedup).
//
// It has no Kafka code. The runtime stages a Kafka transaction's state writes
// in a Txn, produces Txn.Changes to the changelog topics inside that
// transaction, and calls Txn.Apply with the new changelog offsets once the
// transaction has committed (Txn.Discard when it aborts). When a task starts
// on a replica, the runtime reads DB.Offset and replays the changelog from
// there with DB.Restore; when the changelog no longer holds that offset, it
// calls DB.Wipe and replays from the start. It also records when it last
// owned each task (DB.MarkOwned, DB.MarkRestored once a restore is
// complete) and when an unfinished restore from nothing began
// (DB.MarkRestoring): state dated longer ago than the changelog keeps
// tombstones is wiped rather than restored from, and state of tasks not
// owned for a while is deleted (DB.Kept lists it).
//
// # Key layout
//
// Every Pebble key starts with a kind byte. Keyspaces of a (store, task) share
// one prefix encoding:
//
//	prefix(kind, store, task) = kind | len(store) (1 byte) | store | sub-topology (uint32 BE) | partition (uint32 BE)
//
//	0x00 "format"                          -> layout version (1)
//	0x01 prefix | user key                 -> user value             (data)
//	0x02 prefix                            -> 0x41 | offset (int64 BE) (changelog offset)
//	0x03 prefix | first-seen ms | event id -> empty                  (dedup expiry index)
//	0x04 prefix                            -> 0x51 | Unix ns (int64 BE) (last owned, MarkOwned)
//	0x05 prefix                            -> 0x61 | Unix ns (int64 BE) (restore from nothing began, MarkRestoring)
//
// The length byte makes prefixes prefix-free: the prefix of store "a" can never
// be a prefix of store "ab"'s, nor partition 1's of partition 10's, so a range
// over one keyspace never sees another. Store names are 1 to MaxStoreNameLen
// bytes; sub-topologies and partitions are non-negative and fit in 32 bits.
// In the index, first-seen ms is the Unix millisecond with its sign bit
// flipped, big-endian, so index order is event-time order.
//
// Values the package encodes itself start with a format byte (high nibble:
// type, low nibble: version): 0x11 DedupEntry, and the internal 0x41, 0x51
// and 0x61 above. Their decoders validate every byte and return errors
// wrapping ErrCorrupt; they never panic.
//
// # Crash safety
//
// Local state never runs ahead of Kafka: a Txn reaches Pebble only in
// Apply, after the Kafka transaction carrying its changelog records has
// committed. Apply writes the data and the new changelog offset of every
// (store, task) it changed in one Pebble batch, so on disk the recorded
// offset always describes exactly the data present. Hence, at any crash:
//
//   - before the Kafka commit: the Kafka transaction aborts, and the Txn never
//     reached Pebble: local state has none of it;
//   - after the Kafka commit, before or during Apply: the batch is either all
//     on disk or not at all; if not, the recorded offset is behind the
//     changelog and restore replays the missing committed records;
//   - with Options.NoSync, a crash may lose a suffix of applied batches,
//     each with its offset: the same as the previous case.
//
// Replaying changelog records from any offset at or before the recorded one
// converges: records are whole values (or tombstones) per key, applied in
// offset order, so re-applying a suffix the state already includes rewrites
// the same values and ends in the same state. No crash forces a wipe.
//
// # Files on disk
//
// The directory holds Pebble's tables, its write-ahead log, a manifest and
// an options file. The log is what bounds the footprint beyond the data:
// it holds every batch applied since its memtable was last flushed, so
// while the database is open it holds up to about two memtables' worth
// (Options.MemTableSize each: one filling, one being flushed). A log file
// reserves its blocks a MiB at a time as it grows, instead of Pebble's
// default of 110 % of MemTableSize up front, and a log made obsolete by a
// flush is deleted, not kept for reuse (wal.go). Close flushes the
// memtable first, so a directory closed cleanly holds the tables and an
// empty log. None of this touches the argument above: every Apply, Restore
// and Wipe batch is still written to the log and (without NoSync) synced
// before it returns; a log's reserved blocks and its reuse only ever
// changed how fast that sync is, and a flush writes a table and records it
// in the manifest before the log it replaces is deleted. Usage.Disk is
// what the directory occupies (its allocated blocks, as du reports them).
//
// # Dedup stores and their index
//
// A dedup store maps an event id to an encoded DedupEntry. To expire entries
// by event time without scanning the store, each (store, task) also has an
// index keyspace ordered by (first-seen ms, event id). The index is local
// only: it is not changelogged, and Txn.Changes never lists it. Every write
// to a store named in Options.DedupStores (Put, Delete, PutDedup,
// ExpireDedup, and the records of Restore) updates the index in the same
// batch, so the index is always a function of the store's entries, and
// restoring a dedup store from its changelog rebuilds its index. The runtime
// tells the DB which stores are dedup stores through Options.DedupStores when
// it opens it; it must list a store there before it first writes to it.
// ExpireDedup deletes expired entries with ordinary Deletes, so their
// tombstones reach the changelog and other replicas forget them too.
//
// # Concurrency
//
// DB methods are safe for concurrent use (Close excepted). A Txn belongs to
// one goroutine. Several Txns can be open at once if their keyspaces are
// disjoint.
package statestore
