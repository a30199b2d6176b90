package pgsink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/sinks"
)

// dsnEnv names the DSN of the PostgreSQL the tests use
// (scripts/install-postgres.sh prints one; scripts/test-pg.sh sets it).
const dsnEnv = "ONCEFLOW_PG_DSN"

var tableSeq atomic.Int64

// fixture is a sink over a fresh keys table and a fresh effect table
// "rows" (key text, payload text), both dropped when the test ends.
type fixture struct {
	pool  *pgxpool.Pool
	sink  *Sink
	keys  string
	rows  string
	calls atomic.Int64 // effect calls
}

func newFixture(t *testing.T, wrap func(DB) DB) *fixture {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		t.Skipf("no PostgreSQL: set %s (scripts/test-pg.sh does)", dsnEnv)
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Skipf("no PostgreSQL at %s=%s: %v", dsnEnv, dsn, err)
	}
	f := &fixture{pool: pool}
	suffix := fmt.Sprintf("%d_%d", os.Getpid(), tableSeq.Add(1))
	f.keys, f.rows = "pgsink_keys_"+suffix, "pgsink_rows_"+suffix
	if _, err := pool.Exec(ctx, `CREATE TABLE `+f.rows+` (key text PRIMARY KEY, payload text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP TABLE IF EXISTS `+f.rows+`, `+f.keys+`, `+f.keys+`_fences`)
	})
	var db DB = pool
	if wrap != nil {
		db = wrap(pool)
	}
	f.sink, err = New(Config{DB: db, Table: f.keys, Effect: f.effect})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.sink.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

// effect writes one row per delivery; a second row for one key would
// fail on the primary key, but the count of calls tells too.
func (f *fixture) effect(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error {
	f.calls.Add(1)
	_, err := tx.Exec(ctx, `INSERT INTO `+f.rows+` (key, payload) VALUES ($1, $2)`, d.IdempotencyKey, string(d.Payload))
	return err
}

func (f *fixture) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func delivery(key, payload string) sinks.Delivery {
	return sinks.Delivery{Sink: "orders-db", IdempotencyKey: key, Payload: []byte(payload), Attempt: 1}
}

func class(err error) string {
	if err == nil {
		return "ok"
	}
	c, _ := sinks.Classify(err)
	return c.String()
}

// TestOnceAndConflict: a key re-sent applies nothing more; the same key
// with another payload is a permanent conflict.
func TestOnceAndConflict(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	for range 3 {
		if err := f.sink.Deliver(ctx, delivery("k1", "a")); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.sink.Deliver(ctx, delivery("k2", "b")); err != nil {
		t.Fatal(err)
	}
	err := f.sink.Deliver(ctx, delivery("k1", "changed"))
	if class(err) != "permanent" || !errors.Is(err, ErrConflict) {
		t.Errorf("k1 with another payload: %v, want a permanent ErrConflict", err)
	}
	if rows, keys, calls := f.count(t, f.rows), f.count(t, f.keys), f.calls.Load(); rows != 2 || keys != 2 || calls != 2 {
		t.Errorf("%d rows, %d keys, %d effect calls; want 2, 2, 2", rows, keys, calls)
	}
}

// TestConcurrentDoubleDelivery: 16 concurrent deliveries of each of 20
// keys (two replicas, a retry racing its original) apply each key once.
func TestConcurrentDoubleDelivery(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	const keys, senders = 20, 16
	var wg sync.WaitGroup
	var failed atomic.Int64
	for k := range keys {
		for range senders {
			wg.Go(func() {
				if err := f.sink.Deliver(ctx, delivery(fmt.Sprintf("k%d", k), "p")); err != nil {
					failed.Add(1)
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if rows, calls := f.count(t, f.rows), f.calls.Load(); rows != keys || calls != keys || failed.Load() != 0 {
		t.Errorf("%d deliveries of %d keys: %d rows, %d effect calls, %d failed; want %d, %d, 0", keys*senders, keys, rows, calls, failed.Load(), keys, keys)
	}
}

// TestEffectErrorRollsBack: a failing effect leaves no key behind, so the
// next attempt applies; a classified effect error keeps its class; a
// constraint violation is permanent.
func TestEffectErrorRollsBack(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	boom := errors.New("boom")
	effect := f.sink.cfg.Effect
	for _, tc := range []struct {
		err  error
		want string
	}{
		{boom, "transient"},
		{sinks.PermanentError(boom), "permanent"},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), "transient"}, // before COMMIT: not applied
	} {
		f.sink.cfg.Effect = func(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error {
			if err := effect(ctx, tx, d); err != nil {
				return err
			}
			return tc.err
		}
		if err := f.sink.Deliver(ctx, delivery("k", "p")); class(err) != tc.want {
			t.Errorf("effect error %v: %v, want %s", tc.err, err, tc.want)
		}
	}
	f.sink.cfg.Effect = func(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error {
		_, err := tx.Exec(ctx, `INSERT INTO `+f.rows+` (key, payload) VALUES (NULL, 'x')`)
		return err
	}
	if err := f.sink.Deliver(ctx, delivery("k", "p")); class(err) != "permanent" {
		t.Errorf("not-null violation: %v, want permanent", err)
	}
	if rows, keys := f.count(t, f.rows), f.count(t, f.keys); rows != 0 || keys != 0 {
		t.Fatalf("after failed effects: %d rows, %d keys; want none", rows, keys)
	}
	f.sink.cfg.Effect = effect
	if err := f.sink.Deliver(ctx, delivery("k", "p")); err != nil {
		t.Fatal(err)
	}
	if rows := f.count(t, f.rows); rows != 1 {
		t.Errorf("%d rows after the successful attempt, want 1", rows)
	}
}

// lostCommit wraps a DB so that the COMMIT of the transaction begun once
// armed misbehaves: with applied, it commits and then reports a lost
// connection (the answer was lost); without, it has its own backend
// terminated (pg_terminate_backend) first, so the COMMIT meets a FATAL
// answer and a closed connection, and nothing commits.
type lostCommit struct {
	DB
	pool    *pgxpool.Pool
	applied bool
	armed   atomic.Bool // the next transaction misbehaves
}

func (l *lostCommit) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	tx, err := l.DB.BeginTx(ctx, opts)
	if err != nil || !l.armed.Swap(false) {
		return tx, err
	}
	return &lostCommitTx{Tx: tx, l: l}, nil
}

type lostCommitTx struct {
	pgx.Tx
	l *lostCommit
}

func (tx *lostCommitTx) Commit(ctx context.Context) error {
	if tx.l.applied {
		if err := tx.Tx.Commit(ctx); err != nil {
			return err
		}
		return errors.New("read tcp: connection reset by peer (simulated, after COMMIT)")
	}
	var pid uint32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return err
	}
	if _, err := tx.l.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		return err
	}
	return tx.Tx.Commit(ctx)
}

func fenced(key string, gen int64, part int32) sinks.Delivery {
	d := delivery(key, "p")
	d.Fence = sinks.Fence{Generation: gen, Partition: part}
	return d
}

// TestFenceRefusesLower: a delivery whose fence is below the highest the
// sink saw for its outbox partition is refused (permanent, ErrFenced),
// and neither its effect nor its key is written; the same or a higher
// fence applies, and each partition keeps its own.
func TestFenceRefusesLower(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		d    sinks.Delivery
		want bool // applied
	}{
		{fenced("k1", 5, 0), true},
		{fenced("k2", 3, 0), false}, // a zombie's late write
		{fenced("k3", 3, 1), true},  // another partition
		{fenced("k4", 9, 0), true},  // a later owner
		{fenced("k5", 5, 0), false},
		{fenced("k6", 9, 0), true},
	} {
		err := f.sink.Deliver(ctx, tc.d)
		if tc.want && err != nil {
			t.Errorf("%s fence %s: %v, want applied", tc.d.IdempotencyKey, tc.d.Fence, err)
		}
		if !tc.want && (class(err) != "permanent" || !errors.Is(err, sinks.ErrFenced)) {
			t.Errorf("%s fence %s: %v, want a permanent ErrFenced", tc.d.IdempotencyKey, tc.d.Fence, err)
		}
	}
	var refused int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM `+f.rows+` WHERE key IN ('k2', 'k5')`).Scan(&refused); err != nil {
		t.Fatal(err)
	}
	if rows, keys, calls := f.count(t, f.rows), f.count(t, f.keys), f.calls.Load(); rows != 4 || keys != 4 || calls != 4 || refused != 0 {
		t.Errorf("%d rows (%d of refused deliveries), %d keys, %d effect calls; want 4 (0), 4, 4", rows, refused, keys, calls)
	}
}

// TestFenceOrdersOwners: while a delivery of the old owner's fence is in
// its transaction, the new owner's first delivery waits for it to commit;
// afterwards the old fence is refused. No effect of the old owner commits
// after the new owner's began.
func TestFenceOrdersOwners(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if err := f.sink.Deliver(ctx, fenced("a1", 1, 0)); err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	effect := f.sink.cfg.Effect
	var newStarted, late atomic.Bool
	f.sink.cfg.Effect = func(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error {
		if d.Fence.Generation == 1 {
			close(inside)
			<-release
			late.Store(newStarted.Load())
		} else {
			newStarted.Store(true)
		}
		return effect(ctx, tx, d)
	}
	old := make(chan error, 1)
	go func() { old <- f.sink.Deliver(ctx, fenced("a2", 1, 0)) }()
	<-inside
	next := make(chan error, 1)
	go func() { next <- f.sink.Deliver(ctx, fenced("b1", 2, 0)) }()
	var nextErr error
	select {
	case nextErr = <-next:
		t.Errorf("the new owner's delivery ended (%v) while the old owner's was in its transaction", nextErr)
	case <-time.After(300 * time.Millisecond):
		nextErr = errors.New("pending")
	}
	close(release)
	if err := <-old; err != nil {
		t.Errorf("the old owner's delivery in its transaction: %v", err)
	}
	if nextErr != nil && nextErr.Error() == "pending" {
		if err := <-next; err != nil {
			t.Fatal(err)
		}
	}
	if late.Load() {
		t.Error("an effect of the old fence ran after the new owner's began")
	}
	f.sink.cfg.Effect = effect
	if err := f.sink.Deliver(ctx, fenced("a3", 1, 0)); !errors.Is(err, sinks.ErrFenced) {
		t.Errorf("the old owner after the new one: %v, want ErrFenced", err)
	}
	if rows := f.count(t, f.rows); rows != 3 {
		t.Errorf("%d rows, want 3 (a1, a2, b1)", rows)
	}
}

// TestFenceTableMissing: a keys table made by a release that kept no
// fences, and no CreateTable since: the first delivery creates the fence
// table rather than failing (an undefined table is permanent).
func TestFenceTableMissing(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `DROP TABLE `+f.keys+`_fences`); err != nil {
		t.Fatal(err)
	}
	if err := f.sink.Deliver(ctx, fenced("k1", 4, 0)); err != nil {
		t.Fatalf("deliver without a fence table: %v", err)
	}
	if err := f.sink.Deliver(ctx, fenced("k2", 3, 0)); !errors.Is(err, sinks.ErrFenced) {
		t.Errorf("a lower fence after the table was created: %v, want ErrFenced", err)
	}
	if rows := f.count(t, f.rows); rows != 1 {
		t.Errorf("%d rows, want 1", rows)
	}
}

// TestUnknownCommitOutcome: a COMMIT without an answer is unknown; the
// sink is idempotent, so the runner re-sends the same key, which applies
// it once whether the first COMMIT took or not.
func TestUnknownCommitOutcome(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("committed %v", applied), func(t *testing.T) {
			var lc *lostCommit
			f := newFixture(t, func(db DB) DB {
				lc = &lostCommit{DB: db, applied: applied}
				return lc
			})
			lc.pool = f.pool
			ctx := context.Background()
			if err := f.sink.raise(ctx, delivery("k", "p")); err != nil { // the armed transaction is the delivery's
				t.Fatal(err)
			}
			lc.armed.Store(true)
			err := f.sink.Deliver(ctx, delivery("k", "p"))
			if class(err) != "unknown" {
				t.Fatalf("lost COMMIT: %v, want unknown", err)
			}
			if !f.sink.Idempotent() {
				t.Fatal("the sink is not idempotent: an unknown outcome would be parked")
			}
			wantKeys := 0
			if applied {
				wantKeys = 1
			}
			if keys := f.count(t, f.keys); keys != wantKeys {
				t.Fatalf("after the lost COMMIT: %d keys, want %d", keys, wantKeys)
			}
			if err := f.sink.Deliver(ctx, delivery("k", "p")); err != nil {
				t.Fatalf("re-send: %v", err)
			}
			if rows := f.count(t, f.rows); rows != 1 {
				t.Errorf("%d rows after the re-send, want 1", rows)
			}
		})
	}
}

// TestUnreachable: no server, nothing sent: transient.
func TestUnreachable(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/none?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := New(Config{DB: pool, Effect: func(context.Context, pgx.Tx, sinks.Delivery) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Deliver(ctx, delivery("k", "p")); class(err) != "transient" {
		t.Errorf("unreachable database: %v, want transient", err)
	}
}

func TestClassifySQLState(t *testing.T) {
	for code, want := range map[string]string{
		"23505": "permanent", "23502": "permanent", "22P02": "permanent", "42P01": "permanent", "42501": "permanent",
		"40001": "transient", "40P01": "transient", "08006": "transient", "57P01": "transient", "53300": "transient", "XX000": "transient",
	} {
		err := beforeCommit("effect", &pgconn.PgError{Code: code})
		if got := class(err); got != want {
			t.Errorf("SQLSTATE %s: %s, want %s", code, got, want)
		}
		if got := class(commitFailed(&pgconn.PgError{Severity: "ERROR", Code: code})); got != want {
			t.Errorf("SQLSTATE %s at COMMIT: %s, want %s", code, got, want)
		}
	}
	if got := class(commitFailed(&pgconn.PgError{Severity: "FATAL", Code: "57P01"})); got != "unknown" {
		t.Errorf("session terminated at COMMIT: %s, want unknown", got)
	}
	if got := class(commitFailed(pgx.ErrTxCommitRollback)); got != "transient" {
		t.Errorf("COMMIT rolled back: %s, want transient", got)
	}
	if got := class(commitFailed(errors.New("read: connection reset"))); got != "unknown" {
		t.Errorf("COMMIT without an answer: %s, want unknown", got)
	}
}

func TestConfig(t *testing.T) {
	err := Config{Table: "a..b"}.Validate()
	for _, want := range []string{"DB is required", "Effect is required", "empty part"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %q", err, want)
		}
	}
}

// Replicas starting together each create the keys table: none fails
// (CREATE TABLE IF NOT EXISTS alone raises a unique violation on pg_type
// when two run at once).
func TestCreateTableConcurrently(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	table := f.keys + "_c"
	t.Cleanup(func() { _, _ = f.pool.Exec(context.Background(), `DROP TABLE IF EXISTS `+table) })
	for round := range 5 {
		if _, err := f.pool.Exec(ctx, `DROP TABLE IF EXISTS `+table); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				s, err := New(Config{DB: f.pool, Table: table, Effect: f.effect})
				if err == nil {
					err = s.CreateTable(ctx)
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
	}
}
