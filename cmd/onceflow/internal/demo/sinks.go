package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/internal/tooling/receiver"
)

// pgProbeTimeout bounds the check that PostgreSQL is reachable.
const pgProbeTimeout = 3 * time.Second

// externalSinks are the orders topology's external sinks in a demo run: a
// webhook receiver served in this process (it misbehaves a little: some
// answers dropped after applying, some 503s, so the replicas' sink
// runners retry), and, when a PostgreSQL server is reachable, a schema of
// the run's own (dropped at the end) for the rows sink.
type externalSinks struct {
	recv   *receiver.Receiver
	url    string
	stop   context.CancelFunc
	served chan error

	pool   *pgxpool.Pool
	schema string
	dsn    string // the replicas' DSN: the run's schema first in search_path
}

// startSinks serves the receiver and, when cfg.PG answers, creates the
// run's schema. It says on progress whether PostgreSQL is used and why not.
func startSinks(ctx context.Context, cfg Config, progress io.Writer) (*externalSinks, error) {
	recv, err := receiver.New(receiver.Config{DropRate: 0.05, UnavailableRate: 0.05, RetryAfter: time.Second, Seed: 1})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: receiver: %w", err)
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &externalSinks{recv: recv, url: "http://" + ln.Addr().String() + "/orders", stop: stop, served: make(chan error, 1)}
	go func() { s.served <- recv.Serve(sctx, ln) }()
	fmt.Fprintf(progress, "webhook receiver on %s (applies each idempotency key once; drops 5%% of answers after applying, answers 503 to 5%%)\n", s.url)
	switch {
	case cfg.PG == "":
		fmt.Fprintln(progress, "PostgreSQL: none given (--pg or ONCEFLOW_PG_DSN); running without the rows sink")
	default:
		if err := s.openPG(ctx, cfg.PG); err != nil {
			fmt.Fprintf(progress, "PostgreSQL: not reachable (%v); running without the rows sink\n", err)
		} else {
			fmt.Fprintf(progress, "PostgreSQL: one row per accepted order in schema %s (dropped at the end)\n", s.schema)
		}
	}
	return s, nil
}

// openPG connects, checks the server answers, and creates the run's
// schema.
func (s *externalSinks) openPG(ctx context.Context, dsn string) error {
	pctx, cancel := context.WithTimeout(ctx, pgProbeTimeout)
	defer cancel()
	pool, err := pgxpool.New(pctx, dsn)
	if err != nil {
		return err
	}
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return err
	}
	schema := fmt.Sprintf("onceflow_demo_%d", time.Now().UnixNano())
	if _, err := pool.Exec(pctx, "CREATE SCHEMA "+schema); err != nil {
		pool.Close()
		return err
	}
	s.pool, s.schema, s.dsn = pool, schema, withSearchPath(dsn, schema)
	return nil
}

// withSearchPath returns dsn (a URL or key=value pairs) with search_path
// set to schema, sent to the server as a startup parameter.
func withSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return strings.TrimSpace(dsn) + " search_path=" + schema
}

// replicaArgs are the sink flags of `onceflow run orders`.
func (s *externalSinks) replicaArgs() []string {
	args := []string{"--webhook", s.url}
	if s.pool != nil {
		args = append(args, "--pg", s.dsn)
	}
	return args
}

// wait waits until the receiver has applied want effects and PostgreSQL
// holds want rows (when used), for at most within.
func (s *externalSinks) wait(ctx context.Context, want int, within time.Duration, progress io.Writer) error {
	deadline := time.Now().Add(within)
	for {
		effects := int(s.recv.Stats().Effects)
		rows, err := s.rows(ctx)
		if err != nil {
			return err
		}
		if effects >= want && (s.pool == nil || rows >= want) {
			return nil
		}
		if time.Now().After(deadline) {
			what := fmt.Sprintf("the webhook receiver has applied %d of %d effects", effects, want)
			if s.pool != nil {
				what += fmt.Sprintf(" and PostgreSQL holds %d of %d rows", rows, want)
			}
			return fmt.Errorf("demo: after %v %s: the sink runners are stuck (see the replicas' logs, kept with --keep-logs, and onceflow sinks status)", within, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rows counts the rows sink's rows (0 without PostgreSQL).
func (s *externalSinks) rows(ctx context.Context) (int, error) {
	if s.pool == nil {
		return 0, nil
	}
	var n int
	err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{s.schema, orders.RowsTable}.Sanitize()).Scan(&n)
	var missing interface{ SQLState() string }
	if errors.As(err, &missing) && missing.SQLState() == "42P01" {
		return 0, nil // not created yet
	}
	if err != nil {
		return 0, fmt.Errorf("demo: count rows: %w", err)
	}
	return n, nil
}

// report fills the sink figures of res.
func (s *externalSinks) report(ctx context.Context, res *Result) error {
	st := s.recv.Stats()
	res.SinkEffects, res.SinkDuplicateEffects = int(st.Effects), int(st.DuplicateEffects)
	res.SinkRequests = int(st.Requests)
	res.Postgres = s.pool != nil
	if s.pool != nil {
		n, err := s.rows(ctx)
		if err != nil {
			return err
		}
		res.PostgresRows = n
	}
	return nil
}

// close stops the receiver and drops the run's schema.
func (s *externalSinks) close() error {
	s.stop()
	err := <-s.served
	if s.pool != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, derr := s.pool.Exec(ctx, "DROP SCHEMA "+s.schema+" CASCADE"); derr != nil {
			err = errors.Join(err, fmt.Errorf("demo: drop schema %s: %w", s.schema, derr))
		}
		s.pool.Close()
	}
	return err
}
