package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/replicas"
	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/receiver"
	"github.com/onceflow/onceflow/internal/tooling/sinkadmin"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/sinks/pgsink"
)

// runSinks is the external-sinks scenario: order events with their
// truth; a webhook receiver served here that misbehaves (20% of answers
// dropped after applying, 10% 503, 5% 429, Retry-After 1 s, and
// BadRequestRate 400s); three `run orders --webhook ... --pg ...`
// replicas, r3 SIGKILLed and restarted on its state Kills times while
// deliveries are out (at shares of the accepted events applied at the
// receiver). Once every delivery is settled: effects at the receiver and
// dead letters against the accepted events (each one or the other, never
// both), PostgreSQL rows against the accepted events, the sinks' status
// and the truth check of the totals. The server of cfg.PG
// gets a database of the run's own (sinks_<run id>), dropped at the end
// unless KeepDB.
func runSinks(ctx context.Context, r *run) error {
	app, in, out := "sinks-"+r.id, "sinks-in-"+r.id, "sinks-totals-"+r.id
	db, err := createDB(ctx, r.cfg.PG, "sinks_"+r.id)
	if err != nil {
		return err
	}
	defer func() {
		if err := db.close(r.cfg.KeepDB); err != nil {
			r.printf("%v", err)
		}
	}()
	r.printf("brokers %s; database %s; work dir %s", r.brokers[0], db.name, r.dir)

	seed, _ := strconv.ParseUint(r.id, 10, 64)
	recv, err := receiver.New(receiver.Config{DropRate: 0.20, UnavailableRate: 0.10, ThrottleRate: 0.05,
		BadRequestRate: r.cfg.BadRequestRate, RetryAfter: time.Second, Seed: seed})
	if err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("scenario: receiver: %w", err)
	}
	sctx, stopRecv := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- recv.Serve(sctx, ln) }()
	defer func() {
		stopRecv()
		<-served
	}()
	effects := func() int { return int(recv.Stats().Effects) }

	t0 := time.Now()
	truth, err := r.produceOrders(ctx, in)
	if err != nil {
		return err
	}
	accepted := truth.Accepted
	r.printf("produced %d events; %d accepted by the truth", r.cfg.Records, accepted)
	reps, err := r.startThree("", "run", "orders", "--app-id", app, "--input", in, "--output", out,
		"--webhook", "http://"+ln.Addr().String()+"/orders", "--pg", db.dsn)
	if err != nil {
		return err
	}
	victim := reps[2]
	for k := 1; k <= r.cfg.Kills; k++ {
		// Killed while deliveries are out: at a share of the effects expected.
		target := accepted * k / (r.cfg.Kills + 1) * 9 / 10
		if err := waitFor(ctx, 50*time.Millisecond, func() (bool, error) { return effects() >= target, exited(reps) }); err != nil {
			return err
		}
		e, pid := effects(), victim.Pid()
		victim.Kill()
		r.printf("killed r3 (pid %d) with SIGKILL at %d of %d effects at the receiver, %d rows; restarting it on its state", pid, e, accepted, db.rows(ctx))
		if err := victim.Start(); err != nil {
			return err
		}
		if err := readyWithin(ctx, time.Minute, victim); err != nil {
			return err
		}
	}
	if err := r.caughtUp(ctx, app, in, 20*time.Minute, false); err != nil {
		return err
	}
	r.printf("input processed in %.1f s; waiting for the deliveries", time.Since(t0).Seconds())
	// Every delivery settled: effects and rows reach the accepted count
	// (retries after 503 and 429 wait at least Retry-After), less the
	// permanent failures; then the ledgers hold one delivery per accepted
	// event, none pending or failed, and no outbox record is unread.
	deadline := time.Now().Add(20 * time.Minute)
	settled := func() (bool, error) {
		e, rows := effects(), db.rows(ctx)
		if time.Now().After(deadline) {
			r.printf("deliveries not settled after 1200 s: %d effects, %d rows, %d accepted", e, rows, accepted)
			return true, nil
		}
		if e < accepted-int(recv.Stats().PermanentFailures()) || rows < accepted {
			return false, nil
		}
		sts, err := sinkadmin.StatusOf(ctx, r.brokers, app, nil)
		if err != nil || len(sts) < 2 {
			return false, nil
		}
		for _, st := range sts {
			if st.Deliveries < accepted || st.Unread > 0 || st.States[string(sinkrunner.Pending)]+st.States[string(sinkrunner.Failed)] > 0 {
				return false, nil
			}
		}
		return true, nil
	}
	if err := waitFor(ctx, time.Second, settled); err != nil {
		return err
	}
	r.printf("deliveries settled in %.1f s (from the first produce)", time.Since(t0).Seconds())
	if err := sleep(ctx, r.cfg.Quiet); err != nil { // anything more now would be a duplicate
		return err
	}
	sts, err := sinkadmin.StatusOf(ctx, r.brokers, app, nil)
	if err != nil {
		return fmt.Errorf("scenario: sinks status: %w", err)
	}
	for _, st := range sts {
		b, _ := json.Marshal(st)
		r.printf("sink status: %s", b)
	}
	dlNotify, err := sinkadmin.DeadLetters(ctx, r.brokers, app, orders.NotifySink)
	if err != nil {
		return fmt.Errorf("scenario: dead letters: %w", err)
	}
	dlRows, err := sinkadmin.DeadLetters(ctx, r.brokers, app, orders.RowsSink)
	if err != nil {
		return fmt.Errorf("scenario: dead letters: %w", err)
	}
	stopAll(reps)
	st := recv.Stats()
	b, _ := json.Marshal(st)
	r.report("receiver-stats.json", b)

	vrep, err := verify.CheckTruth(ctx, r.brokers, truth, in, out, app+"-rejected")
	if err != nil {
		return fmt.Errorf("scenario: verify: %w", err)
	}
	vb, _ := json.Marshal(vrep)
	r.report("verify.json", vb)
	var rows, distinctRows, keys int
	if err := db.pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT event_id) FROM "+orders.RowsTable).Scan(&rows, &distinctRows); err != nil {
		return fmt.Errorf("scenario: count rows: %w", err)
	}
	if err := db.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgsink.DefaultTable).Scan(&keys); err != nil {
		return fmt.Errorf("scenario: count keys: %w", err)
	}
	// A permanent failure (400) is a dead letter, but a runner killed
	// after the answer and before it recorded the dead letter tries the
	// delivery again, which may then be applied: the receiver counts
	// answers, so a key may have several, or one and its effect. Each
	// accepted event is an effect or a dead letter, never both.
	permanent := int(st.PermanentFailures())
	deadKeys, applied := map[string]bool{}, 0
	for _, d := range dlNotify {
		if !deadKeys[d.Key] && recv.Applied(d.Key) {
			applied++
		}
		deadKeys[d.Key] = true
	}
	r.printf("receiver: %d requests, answers %v, %d re-sent after an applied attempt, %d fence regressions",
		st.Requests, st.Answers, st.DuplicateAttempts, st.FenceRegressions)
	r.printf("verify --truth: %s", map[bool]string{true: "ok", false: "see " + r.dir + "/verify.json"}[vrep.OK])
	c := &checks{r: r}
	for _, ck := range []struct {
		name      string
		got, want int
	}{
		{"receiver effects + dead-lettered keys (webhook) == accepted events", int(st.Effects) + len(deadKeys), accepted},
		{"receiver distinct keys == accepted events", int(st.DistinctKeys), accepted},
		{"receiver duplicate effects == 0", int(st.DuplicateEffects), 0},
		{"postgres rows == accepted events", rows, accepted},
		{"postgres distinct event ids == accepted events", distinctRows, accepted},
		{"postgres idempotency keys == accepted events", keys, accepted},
		{"dead-lettered keys (webhook) applied at the receiver == 0", applied, 0},
		{"dead-lettered keys (webhook) beyond the receiver's permanent failures == 0", max(len(deadKeys)-permanent, 0), 0},
		{"dead letters (postgres) == 0", len(dlRows), 0},
	} {
		c.check(fmt.Sprintf("%s: %d (want %d)", ck.name, ck.got, ck.want), ck.got == ck.want)
	}
	c.check("verify --truth", vrep.OK)
	return c.err()
}

// waitFor polls done every interval until it says true or fails.
func waitFor(ctx context.Context, every time.Duration, done func() (bool, error)) error {
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if err := sleep(ctx, every); err != nil {
			return err
		}
	}
}

// exited is an error naming the first replica of reps that has exited.
func exited(reps []*replicas.Replica) error {
	for _, rep := range reps {
		if rep.Exited() {
			return fmt.Errorf("scenario: %s exited (see %s)", rep.Name, rep.LogPath)
		}
	}
	return nil
}

// database is the run's own PostgreSQL database.
type database struct {
	name  string
	dsn   string // the replicas' DSN, naming the database
	admin string // the DSN given, where the database is created and dropped
	pool  *pgxpool.Pool
}

// createDB creates the database name in the server of dsn.
func createDB(ctx context.Context, dsn, name string) (*database, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("scenario: postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("scenario: create database %s: %w", name, err)
	}
	d := &database{name: name, dsn: withDatabase(dsn, name), admin: dsn}
	if d.pool, err = pgxpool.New(ctx, d.dsn); err != nil {
		d.close(false)
		return nil, fmt.Errorf("scenario: postgres: %w", err)
	}
	return d, nil
}

// withDatabase returns dsn (a URL or key=value pairs) naming database db.
func withDatabase(dsn, db string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + db
		return u.String()
	}
	return strings.TrimSpace(dsn) + " dbname=" + db
}

// rows counts the rows sink's rows (0 before its table exists).
func (d *database) rows(ctx context.Context) int {
	var n int
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM "+orders.RowsTable).Scan(&n); err != nil {
		return 0
	}
	return n
}

// close closes the pool and drops the database unless keep.
func (d *database) close(keep bool) error {
	if d.pool != nil {
		d.pool.Close()
	}
	if keep {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("scenario: postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("scenario: drop database %s: %w", d.name, err)
	}
	return nil
}
