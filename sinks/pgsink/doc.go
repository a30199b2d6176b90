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
// Errors are classified for the runner: anything before COMMIT rolls the
// transaction back, so it is transient (PostgreSQL errors are classified
// by SQLSTATE: data and constraint errors, undefined objects and
// permission errors are permanent); a key seen before with another payload
// is a permanent conflict (ErrConflict); a COMMIT that got no answer has an
// unknown outcome, and since the sink is idempotent the runner re-sends it
// under the same key, which then either applies it or finds it applied.
package pgsink
