// Package pgsink is a sinks.Sink whose effect is a PostgreSQL write, made
// exactly once: in one database transaction it records the delivery's
// idempotency key in a keys table (INSERT ... ON CONFLICT DO NOTHING) and
// runs the user's effect only when the key was new, then commits. The key
// and the effect commit together or not at all, so however often a
// delivery is re-sent (a retry, a replayed outbox, a second replica) the
// effect is applied once.
//
// The keys table (default onceflow_sink_keys, created by CreateTable) holds
// (sink, key, payload_hash, applied_at) with PRIMARY KEY (sink, key).
// Concurrent deliveries of one key serialise on that key's row: the second
// waits for the first to commit, then finds the key and does nothing.
//
// Each delivery checks its fence (sinks.Fence) in the same transaction.
// The fence table (default the keys table's name followed by _fences,
// created by CreateTable too) holds the highest fence generation per
// (sink, outbox_partition). A delivery takes a share lock on its
// partition's row: an equal fence goes on; a higher one stored means a
// later runner owns the partition, and the delivery is refused with a
// permanent error wrapping sinks.ErrFenced, nothing written; a lower one
// stored is first raised in a short transaction of its own, which waits
// for the deliveries holding the share lock. So once the new owner's
// first delivery began, no delivery of a zombie commits. A keys table
// created by an earlier release has no fence table beside it: CreateTable
// creates it, or else the first delivery does.
//
// Errors are classified for the runner: anything before COMMIT rolls the
// transaction back, so it is transient (PostgreSQL errors are classified
// by SQLSTATE: data and constraint errors, undefined objects and
// permission errors are permanent); a key seen before with another payload
// is a permanent conflict (ErrConflict); a fence below the highest is
// permanent (sinks.ErrFenced, which the runner takes as a sign that it
// lost the partition, not as a failure of the delivery); a COMMIT that got no answer has an
// unknown outcome, and since the sink is idempotent the runner re-sends it
// under the same key, which then either applies it or finds it applied.
package pgsink
