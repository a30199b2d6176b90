//go:build long && (pg || !pg)

// `make test-pg` runs this file's tests against PostgreSQL: the tag marks the
// file for scripts/test-tagged.sh, the constraint holds wherever `long` does.

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package sinkrunner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/testrig/testproxy"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/pgsink"
)

// stalling wraps a sink; its stall-th attempt waits for release before
// it reaches the sink, and its answer is sent on back.
type stalling struct {
	sinks.Sink
	mu      sync.Mutex
	calls   int
	stall   int
	release chan struct{}
	back    chan error
}

func (s *stalling) Idempotent() bool { return true }

func (s *stalling) Deliver(ctx context.Context, d sinks.Delivery) error {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if n != s.stall {
		return s.Sink.Deliver(ctx, d)
	}
	<-s.release
	err := s.Sink.Deliver(ctx, d)
	s.back <- err
	return err
}

// End to end on the embedded broker and a real PostgreSQL (skipped
// without ONCEFLOW_PG_DSN): runner a is evicted while one of its attempts
// to the PostgreSQL sink is held; runner b takes the partition over and
// delivers, the held key included. When a's held attempt reaches the
// database, pgsink refuses it in the effect's transaction (ErrFenced: a's
// fence is below b's), and every key has one row.
func TestZombieLateDeliveryRefusedByPgsink(t *testing.T) {
	dsn := os.Getenv("ONCEFLOW_PG_DSN")
	if dsn == "" {
		t.Skip("no PostgreSQL: set ONCEFLOW_PG_DSN (scripts/test-pg.sh does)")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Skipf("no PostgreSQL at ONCEFLOW_PG_DSN=%s: %v", dsn, err)
	}
	suffix := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	rows, keys := "e2e_rows_"+suffix, "e2e_keys_"+suffix
	if _, err := pool.Exec(ctx, `CREATE TABLE `+rows+` (key text NOT NULL, fence bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP TABLE IF EXISTS `+rows+`, `+keys+`, `+keys+`_fences`)
	})
	db, err := pgsink.New(pgsink.Config{DB: pool, Table: keys, Effect: func(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error {
		_, err := tx.Exec(ctx, `INSERT INTO `+rows+` (key, fence) VALUES ($1, $2)`, d.IdempotencyKey, d.Fence.Generation)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(q string) (n int) {
		if err := pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	env := enginetest.New(t)
	const n = 100
	app, in := filledOutbox(t, env, "pgfence", db, n)

	proxy := testproxy.New()
	t.Cleanup(proxy.Close) // after the runners have stopped
	tune := evictionTuning(proxy, 2*time.Minute)
	zombie := &stalling{Sink: db, stall: 5, release: make(chan struct{}), back: make(chan error, 1)}
	startRunnerWith(t, env, app, "a", hookTopology(in, zombie), tune(true), nil)
	healAtEnd(t, proxy)
	waitFor(t, "runner a delivering", 30*time.Second, func() bool { return count(`SELECT count(*) FROM `+rows) >= 4 })
	proxy.Blackhole(12) // Heartbeat: the coordinator hears nothing more from a's membership
	var first int
	waitFor(t, "a's fence", 10*time.Second, func() bool { first = count(`SELECT max(fence) FROM ` + rows); return first > 0 })
	startRunnerWith(t, env, app, "b", hookTopology(in, db), tune(false), nil)
	waitFor(t, "every key delivered by b", 90*time.Second, func() bool { return count(`SELECT count(DISTINCT key) FROM `+rows) >= n })
	close(zombie.release)
	var late error
	select {
	case late = <-zombie.back:
	case <-time.After(60 * time.Second):
		t.Fatal("runner a's held attempt never returned")
	}
	total, distinct := count(`SELECT count(*) FROM `+rows), count(`SELECT count(DISTINCT key) FROM `+rows)
	byA := count(fmt.Sprintf(`SELECT count(*) FROM %s WHERE fence = %d`, rows, first))
	t.Logf("%d rows, %d keys, %d with a's fence %d; a's late attempt: %v", total, distinct, byA, first, late)
	if !errors.Is(late, sinks.ErrFenced) {
		t.Errorf("runner a's late attempt: %v, want it refused with ErrFenced", late)
	}
	if total != n || distinct != n {
		t.Errorf("%d rows for %d keys, want %d and %d", total, distinct, n, n)
	}
}
