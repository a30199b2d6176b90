package pgsink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceflow/onceflow/sinks"
)

// DefaultTable is the keys table's default name.
const DefaultTable = "onceflow_sink_keys"

// ErrConflict is wrapped by the error of a delivery whose idempotency key
// was applied before with another payload (the sink-side twin of a dedup
// conflict). Not retryable.
var ErrConflict = errors.New("pgsink: idempotency key applied before with another payload")

// Effect applies a delivery inside tx. It runs at most once per
// idempotency key that commits. Returning an error rolls the whole
// transaction back (key included); a sinks.Error in the chain keeps its
// class, other errors are classified as Deliver says.
type Effect func(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error

// DB begins transactions: a *pgxpool.Pool (safe for concurrent
// deliveries) or a *pgx.Conn (one delivery at a time).
type DB interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Config configures a PostgreSQL sink.
type Config struct {
	// DB is where the keys and the effect live. Required.
	DB DB
	// Effect is the write to make once per delivery. Required.
	Effect Effect
	// Table is the keys table, optionally schema-qualified
	// ("schema.table"). Default DefaultTable.
	Table string
	// FenceTable keeps the highest fence per sink and outbox partition,
	// optionally schema-qualified. Default: Table followed by "_fences".
	FenceTable string
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.DB == nil {
		errs = append(errs, errors.New("pgsink: DB is required"))
	}
	if c.Effect == nil {
		errs = append(errs, errors.New("pgsink: Effect is required"))
	}
	for _, t := range []string{c.Table, c.FenceTable} {
		if t == "" {
			continue
		}
		for _, part := range strings.Split(t, ".") {
			if part == "" {
				errs = append(errs, fmt.Errorf("pgsink: table %q has an empty part", t))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// Sink applies each delivery's effect once. Safe for concurrent use when
// its DB is.
type Sink struct {
	cfg    Config
	table  string // quoted
	fences string // quoted
}

// New returns a PostgreSQL sink. It does no I/O.
func New(cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.FenceTable == "" {
		cfg.FenceTable = cfg.Table + "_fences"
	}
	quote := func(t string) string { return pgx.Identifier(strings.Split(t, ".")).Sanitize() }
	return &Sink{cfg: cfg, table: quote(cfg.Table), fences: quote(cfg.FenceTable)}, nil
}

// Idempotent is true: a re-sent delivery finds its key and does nothing.
func (s *Sink) Idempotent() bool { return true }

// CreateTable creates the keys table and the fence table where they do
// not exist. (A release that kept no fences created the keys table only;
// a delivery that finds no fence table calls CreateTable itself.)
func (s *Sink) CreateTable(ctx context.Context) error {
	tx, err := s.cfg.DB.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("pgsink: create table: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Replicas starting together: CREATE TABLE IF NOT EXISTS is not safe
	// against a concurrent one (a unique violation on pg_type), so the
	// creators take turns.
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, s.table)
	if err == nil {
		_, err = tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.table+` (
	sink text NOT NULL,
	key text NOT NULL,
	payload_hash bytea NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (sink, key)
)`)
	}
	if err == nil {
		_, err = tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.fences+` (
	sink text NOT NULL,
	outbox_partition integer NOT NULL,
	generation bigint NOT NULL,
	raised_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (sink, outbox_partition)
)`)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("pgsink: create tables %s, %s: %w", s.table, s.fences, err)
	}
	return nil
}

// errRaise: the fence table holds no fence or a lower one for the
// delivery's partition; it is raised in a transaction of its own first.
var errRaise = errors.New("pgsink: the fence is to be raised")

// errNoFenceTable: the fence table does not exist (a keys table created
// by a release that kept no fences, and CreateTable not called since).
var errNoFenceTable = errors.New("pgsink: no fence table")

// Deliver checks d's fence, records d's key and applies the effect in one
// transaction, or does nothing when the key committed before with the
// same payload. See the package doc for how errors are classified.
func (s *Sink) Deliver(ctx context.Context, d sinks.Delivery) error {
	err := s.deliver(ctx, d)
	if errors.Is(err, errNoFenceTable) {
		if err := s.CreateTable(ctx); err != nil {
			return beforeCommit("create the missing fence table", err)
		}
		err = s.deliver(ctx, d)
	}
	if !errors.Is(err, errRaise) {
		return err
	}
	if err := s.raise(ctx, d); err != nil {
		return err
	}
	// The fence is now at least d's: the second pass finds it equal or
	// higher.
	return s.deliver(ctx, d)
}

func (s *Sink) deliver(ctx context.Context, d sinks.Delivery) error {
	hash := sha256.Sum256(d.Payload)
	tx, err := s.cfg.DB.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return beforeCommit("begin", err)
	}
	// A no-op after Commit; after a failure it ends the transaction even
	// when ctx has expired.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := s.checkFence(ctx, tx, d); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO `+s.table+` (sink, key, payload_hash) VALUES ($1, $2, $3) ON CONFLICT (sink, key) DO NOTHING`,
		d.Sink, d.IdempotencyKey, hash[:])
	if err != nil {
		return beforeCommit("insert key", err)
	}
	if tag.RowsAffected() == 0 {
		return s.applied(ctx, tx, d, hash)
	}
	if err := s.cfg.Effect(ctx, tx, d); err != nil {
		if _, ok := errors.AsType[*sinks.Error](err); ok {
			return fmt.Errorf("pgsink: effect: %w", err)
		}
		return beforeCommit("effect", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return commitFailed(err)
	}
	return nil
}

// checkFence takes a share lock on the fence of d's partition and
// returns nil when it equals d's, an error wrapping sinks.ErrFenced when
// it is higher (a later owner delivered: nothing is applied), and
// errRaise when it is lower or absent. The share lock is held until the
// transaction ends, and raising the fence needs an exclusive one: so a
// delivery of a lower fence either commits before the fence is raised or
// finds it raised, and no effect of a zombie commits after the first
// delivery of the partition's new owner began.
func (s *Sink) checkFence(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error {
	var high int64
	err := tx.QueryRow(ctx, `SELECT generation FROM `+s.fences+` WHERE sink = $1 AND outbox_partition = $2 FOR SHARE`,
		d.Sink, d.Fence.Partition).Scan(&high)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return errRaise
	case err != nil:
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P01" {
			return fmt.Errorf("%w %s: %w", errNoFenceTable, s.fences, err)
		}
		return beforeCommit("read fence", err)
	case high > d.Fence.Generation:
		return sinks.PermanentError(fmt.Errorf("pgsink: %w: sink %q fence %s is below %d", sinks.ErrFenced, d.Sink, d.Fence, high))
	case high < d.Fence.Generation:
		return errRaise
	}
	return nil
}

// raise moves the fence of d's partition up to d's, in a transaction of
// its own (taking the exclusive lock inside the delivery's transaction,
// after its share lock, would deadlock two deliveries raising together).
// It never lowers it.
func (s *Sink) raise(ctx context.Context, d sinks.Delivery) error {
	tx, err := s.cfg.DB.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return beforeCommit("begin", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	_, err = tx.Exec(ctx, `INSERT INTO `+s.fences+` AS f (sink, outbox_partition, generation) VALUES ($1, $2, $3)
ON CONFLICT (sink, outbox_partition) DO UPDATE SET generation = EXCLUDED.generation, raised_at = now()
WHERE f.generation < EXCLUDED.generation`, d.Sink, d.Fence.Partition, d.Fence.Generation)
	if err != nil {
		return beforeCommit("raise fence", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return beforeCommit("raise fence", err)
	}
	return nil
}

// applied checks that the key, already committed, was committed with the
// same payload: nil if so, ErrConflict if not.
func (s *Sink) applied(ctx context.Context, tx pgx.Tx, d sinks.Delivery, hash [sha256.Size]byte) error {
	var stored []byte
	err := tx.QueryRow(ctx, `SELECT payload_hash FROM `+s.table+` WHERE sink = $1 AND key = $2`, d.Sink, d.IdempotencyKey).Scan(&stored)
	if err != nil {
		return beforeCommit("read key", err)
	}
	if !bytes.Equal(stored, hash[:]) {
		return sinks.PermanentError(fmt.Errorf("%w (sink %q, key %q)", ErrConflict, d.Sink, d.IdempotencyKey))
	}
	return nil
}

// beforeCommit classifies a failure before COMMIT: the transaction did
// not commit (PostgreSQL rolls back a transaction whose connection is
// lost), so nothing was applied.
func beforeCommit(step string, err error) error {
	err = fmt.Errorf("pgsink: %s: %w", step, err)
	if permanentSQLState(err) {
		return sinks.PermanentError(err)
	}
	return sinks.TransientError(err, 0)
}

// commitFailed classifies a failed COMMIT. An ERROR answer (a
// serialization failure, a deferred constraint) or pgx's "rolled back"
// means it did not commit. Anything else leaves the outcome unknown: a
// lost connection or an expired context, and a FATAL answer too (a
// session terminated during COMMIT may have committed locally first,
// as PostgreSQL warns when it cancels a synchronous-replication wait).
func commitFailed(err error) error {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	if ok && pgErr.Severity == "ERROR" || errors.Is(err, pgx.ErrTxCommitRollback) {
		return beforeCommit("commit", err)
	}
	return sinks.UnknownError(fmt.Errorf("pgsink: commit: %w", err))
}

// permanentSQLState reports whether err carries a PostgreSQL error that
// the same statement would meet again: data exceptions (22), integrity
// constraint violations (23), invalid transaction state from the effect
// (25), authorisation (28), syntax errors and undefined objects or
// permissions (42). Connection (08), transaction rollback (40, e.g.
// serialization failures and deadlocks), resource (53), operator
// intervention (57) and system (58) errors are transient, as is anything
// unknown.
func permanentSQLState(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "25", "28", "42":
		return true
	}
	return false
}
