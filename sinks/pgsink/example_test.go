package pgsink_test

import (
	"context"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/pgsink"
)

// One row per accepted order, however often a delivery is re-sent.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("ONCEFLOW_PG_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	sink, err := pgsink.New(pgsink.Config{
		DB: pool,
		Effect: func(ctx context.Context, tx pgx.Tx, d sinks.Delivery) error {
			_, err := tx.Exec(ctx, `INSERT INTO accepted_orders (key, body) VALUES ($1, $2)`, d.IdempotencyKey, d.Payload)
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sink.CreateTable(ctx); err != nil {
		log.Fatal(err)
	}
	// The sink runner calls sink.Deliver for each delivery.
}
