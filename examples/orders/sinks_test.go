package orders_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/internal/tooling/receiver"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/httpsink"
	"github.com/onceflow/onceflow/sinks/pgsink"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

var nopSink = sinks.Func(func(context.Context, sinks.Delivery) error { return nil })

// events are the input of TestOrdersTotals: e1, e2, e3 and e5 are
// accepted; a replay, a late version and a reused id are rejected.
var events = []orders.Event{
	{EventID: "e1", OrderID: "o1", Customer: "c1", Amount: 100, Version: 1},
	{EventID: "e2", OrderID: "o2", Customer: "c1", Amount: 50, Version: 1},
	{EventID: "e1", OrderID: "o1", Customer: "c1", Amount: 100, Version: 1},
	{EventID: "e3", OrderID: "o1", Customer: "c1", Amount: 120, Version: 3},
	{EventID: "e4", OrderID: "o1", Customer: "c1", Amount: 999, Version: 2},
	{EventID: "e3", OrderID: "o1", Customer: "c1", Amount: 130, Version: 3},
	{EventID: "e5", OrderID: "o3", Customer: "c2", Amount: 7, Version: 1},
}

// outboxes runs events through the topology with both sinks and returns
// the delivery requests of each sink, as deliveries.
func outboxes(t *testing.T) map[string][]sinks.Delivery {
	t.Helper()
	d, err := topologytest.New(orders.TopologyWithSinks("orders", "totals", orders.Sinks{Notify: nopSink, Rows: nopSink}), topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "orders", serde.String(), serde.JSON[orders.Event]())
	for _, e := range events {
		err := in.PipeRecord(topologytest.Record[string, orders.Event]{Key: e.Customer, Value: e,
			Headers: topology.Headers{{Key: "event-id", Value: []byte(e.EventID)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][]sinks.Delivery{}
	for _, sink := range []string{orders.NotifySink, orders.RowsSink} {
		recs, err := topologytest.Output(d, topologytest.OutboxTopic(sink), serde.String(), serde.Bytes()).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			key, _ := r.Headers.Get("onceflow-idempotency-key")
			got[sink] = append(got[sink], sinks.Delivery{Sink: sink, IdempotencyKey: string(key), Payload: r.Value, Source: r.Source, Attempt: 1})
		}
	}
	return got
}

// One delivery request per accepted order, to each sink, keyed by the
// event id; rejected events make none.
func TestOrdersSinkRequests(t *testing.T) {
	got := outboxes(t)
	for _, sink := range []string{orders.NotifySink, orders.RowsSink} {
		var keys, ids []string
		for _, d := range got[sink] {
			var e orders.Event
			if err := json.Unmarshal(d.Payload, &e); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, d.IdempotencyKey)
			ids = append(ids, e.EventID+"/"+e.OrderID)
		}
		wantKeys := []string{sink + ":e1", sink + ":e2", sink + ":e3", sink + ":e5"}
		if !slices.Equal(keys, wantKeys) || !slices.Equal(ids, []string{"e1/o1", "e2/o2", "e3/o1", "e5/o3"}) {
			t.Errorf("%s: keys %v payloads %v; want %v", sink, keys, ids, wantKeys)
		}
	}
}

// Every delivery request sent twice (a retry after a lost answer, a
// replayed outbox) to the webhook receiver, which drops half its answers
// after applying: one effect per accepted order.
func TestOrdersNotificationsOnce(t *testing.T) {
	r, err := receiver.New(receiver.Config{DropRate: 0.5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	defer srv.Close()
	hook, err := httpsink.New(httpsink.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	deliveries := outboxes(t)[orders.NotifySink]
	for range 2 {
		for _, d := range deliveries {
			err := hook.Deliver(context.Background(), d)
			if c, _ := sinks.Classify(err); err != nil && c != sinks.Unknown {
				t.Fatal(err)
			}
		}
	}
	// At least the second round's 4 re-sends; net/http re-sends some
	// dropped answers itself.
	if st := r.Stats(); st.Effects != 4 || st.DuplicateEffects != 0 || st.DuplicateAttempts < 4 || st.Answers[receiver.AnswerDropped] == 0 {
		t.Errorf("receiver: %+v; want 4 effects, 0 duplicate effects, at least 4 duplicate attempts, some dropped answers", st)
	}
}

// The same with the PostgreSQL sink: one row per accepted order.
func TestOrdersRowsOnce(t *testing.T) {
	dsn := os.Getenv("ONCEFLOW_PG_DSN")
	if dsn == "" {
		t.Skip("no PostgreSQL: set ONCEFLOW_PG_DSN (scripts/test-pg.sh does)")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Skipf("no PostgreSQL at ONCEFLOW_PG_DSN=%s: %v", dsn, err)
	}
	table, keys := fmt.Sprintf("orders_test_rows_%d", os.Getpid()), fmt.Sprintf("orders_test_keys_%d", os.Getpid())
	t.Cleanup(func() { _, _ = pool.Exec(ctx, `DROP TABLE IF EXISTS `+table+`, `+keys) })
	if err := orders.CreateRowsTable(ctx, pool, table); err != nil {
		t.Fatal(err)
	}
	rows, err := pgsink.New(pgsink.Config{DB: pool, Effect: orders.RowsEffect(table), Table: keys})
	if err != nil {
		t.Fatal(err)
	}
	if err := rows.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	deliveries := outboxes(t)[orders.RowsSink]
	for range 2 {
		for _, d := range deliveries {
			if err := rows.Deliver(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	var n int64
	var sum int64
	if err := pool.QueryRow(ctx, `SELECT count(*), sum(amount) FROM `+table).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != 4 || sum != 100+50+120+7 {
		t.Errorf("%d rows summing to %d; want 4 summing to 277", n, sum)
	}
}
