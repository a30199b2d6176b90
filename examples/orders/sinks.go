package orders

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/pgsink"
	"github.com/onceflow/onceflow/topology"
)

// Sink names: they name the outbox topics ("<application id>-sink-<name>"),
// the dead-letter topics and the ledgers, so they never change.
const (
	NotifySink = "order-notifications"
	RowsSink   = "order-rows"
)

// Sinks are the orders topology's optional external sinks; a nil field
// leaves that sink out. Each receives one delivery per accepted order
// event (past the dedup and version gates): the Event as JSON, under the
// idempotency key "<sink name>:<event id>".
type Sinks struct {
	// Notify is a webhook (an httpsink.Sink, for instance): one
	// notification per accepted order.
	Notify sinks.Sink
	// Rows writes one row per accepted order (a pgsink.Sink with
	// RowsEffect, for instance).
	Rows sinks.Sink
}

// TopologyWithSinks is Topology with the given external sinks.
func TopologyWithSinks(input, output string, s Sinks) *topology.Topology {
	t, accepted := build(input, output)
	if s.Notify != nil {
		topology.ToSink(accepted, NotifySink, s.Notify, serde.JSON[Event](), eventKey(NotifySink))
	}
	if s.Rows != nil {
		topology.ToSink(accepted, RowsSink, s.Rows, serde.JSON[Event](), eventKey(RowsSink))
	}
	return t
}

// eventKey is the idempotency key of an accepted event: the event id is
// unique among accepted events (the dedup gate sees to it) and survives
// the input being written twice upstream.
func eventKey(sink string) func(string, Event) string {
	return func(_ string, e Event) string { return sink + ":" + e.EventID }
}

// RowsTable is the default table of RowsEffect.
const RowsTable = "onceflow_orders"

// CreateRowsTable creates the table (RowsTable when "") if it does not
// exist.
func CreateRowsTable(ctx context.Context, db pgsink.DB, table string) error {
	table = rowsTable(table)
	tx, err := db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("orders: create %s: %w", table, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Replicas starting together take turns: CREATE TABLE IF NOT EXISTS
	// is not safe against a concurrent one.
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, table)
	if err == nil {
		_, err = tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
	event_id text PRIMARY KEY,
	order_id text NOT NULL,
	customer text NOT NULL,
	amount bigint NOT NULL,
	version bigint NOT NULL
)`)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("orders: create %s: %w", table, err)
	}
	return nil
}

func rowsTable(table string) string {
	if table == "" {
		table = RowsTable
	}
	return pgx.Identifier{table}.Sanitize()
}

// RowsEffect is the pgsink effect of the Rows sink: one row in table
// (RowsTable when "") per accepted order event. pgsink runs it once per
// idempotency key; the table's primary key (the event id) would refuse a
// second row anyway.
func RowsEffect(table string) pgsink.Effect {
	insert := `INSERT INTO ` + rowsTable(table) + ` (event_id, order_id, customer, amount, version) VALUES ($1, $2, $3, $4, $5)`
	return func(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error {
		var e Event
		if err := json.Unmarshal(d.Payload, &e); err != nil {
			return sinks.PermanentError(fmt.Errorf("orders: payload: %w", err))
		}
		_, err := tx.Exec(ctx, insert, e.EventID, e.OrderID, e.Customer, e.Amount, int64(e.Version))
		return err
	}
}
