package main

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/examples/allstages"
	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/examples/orders"
	kit "github.com/onceflow/onceflow/internal/cli"
	"github.com/onceflow/onceflow/sinks/httpsink"
	"github.com/onceflow/onceflow/sinks/pgsink"
	"github.com/onceflow/onceflow/topology"
)

// RunCmd runs one replica of a built-in topology until SIGINT or SIGTERM.
type RunCmd struct {
	Copy      RunCopyCmd      `cmd:"" help:"The copy topology: every input record to the output, key and value unchanged, with a lineage header."`
	Orders    RunOrdersCmd    `cmd:"" help:"The orders topology: dedup by event id, version gate per order, per-customer totals."`
	Pageviews RunPageviewsCmd `cmd:"" help:"The pageviews topology: final view counts per user per hour, 5 minutes of grace."`
	Allstages RunAllstagesCmd `cmd:"" help:"The allstages topology: every kind of stage (merge, gates, aggregates, fan-out, repartition, through, every window kind, punctuators, sinks); what onceflow chaos --topology allstages runs."`
}

// RunAllstagesCmd is `onceflow run allstages`.
type RunAllstagesCmd struct {
	ReplicaFlags
	Prefix  string `name:"topic-prefix" required:"" help:"Prefix of the topics: reads <prefix>-web and <prefix>-app, writes <prefix>-account-counts, -item-counts, -ticks, -lines (through) and -windows."`
	Webhook string `name:"webhook" placeholder:"URL" help:"Deliver the line-hook and tick-hook sinks to this webhook, declared not idempotent (an attempt without an answer is parked as unknown, never re-sent). Default: no sinks."`
}

// Run runs the replica.
func (c *RunAllstagesCmd) Run(env *Env) error {
	var s allstages.Sinks
	if c.Webhook != "" {
		hook, err := httpsink.New(httpsink.Config{URL: c.Webhook, NotIdempotent: true})
		if err != nil {
			return err
		}
		s.Lines, s.Ticks = hook, hook
	}
	return runReplica(env, c.ReplicaFlags, allstages.Topology(c.Prefix, s))
}

// RunOrdersCmd is `onceflow run orders`.
type RunOrdersCmd struct {
	ReplicaFlags
	Input         string `name:"input" required:"" help:"Input topic of order events."`
	Output        string `name:"output" required:"" help:"Output topic of customer totals (created when missing)."`
	Webhook       string `name:"webhook" placeholder:"URL" help:"Notify this webhook once per accepted order (the order-notifications sink: a POST with an Idempotency-Key)."`
	WebhookSecret string `name:"webhook-secret" env:"ONCEFLOW_WEBHOOK_SECRET" help:"Sign webhook deliveries with HMAC-SHA256 and this secret."`
	PG            string `name:"pg" placeholder:"DSN" help:"Write one row per accepted order to this PostgreSQL database (the order-rows sink; tables onceflow_orders and onceflow_sink_keys, created when missing)."`
}

// Run runs the replica.
func (c *RunOrdersCmd) Run(env *Env) error {
	if c.Webhook == "" && c.PG == "" {
		return runReplica(env, c.ReplicaFlags, orders.Topology(c.Input, c.Output))
	}
	var s orders.Sinks
	if c.Webhook != "" {
		hook, err := httpsink.New(httpsink.Config{URL: c.Webhook, Secret: []byte(c.WebhookSecret)})
		if err != nil {
			return err
		}
		s.Notify = hook
	}
	if c.PG != "" {
		pool, err := pgxpool.New(env.Ctx, c.PG)
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		defer pool.Close()
		rows, err := pgsink.New(pgsink.Config{DB: pool, Effect: orders.RowsEffect("")})
		if err != nil {
			return err
		}
		if err := orders.CreateRowsTable(env.Ctx, pool, ""); err != nil {
			return err
		}
		if err := rows.CreateTable(env.Ctx); err != nil {
			return err
		}
		s.Rows = rows
	}
	return runReplica(env, c.ReplicaFlags, orders.TopologyWithSinks(c.Input, c.Output, s))
}

// RunCopyCmd is `onceflow run copy`.
type RunCopyCmd struct {
	ReplicaFlags
	Input  string `name:"input" required:"" help:"Input topic."`
	Output string `name:"output" required:"" help:"Output topic (created when missing)."`
}

// Run runs the replica.
func (c *RunCopyCmd) Run(env *Env) error {
	return runReplica(env, c.ReplicaFlags, copyex.Topology(c.Input, c.Output))
}

func runReplica(env *Env, f ReplicaFlags, t *topology.Topology) error {
	return kit.RunReplica(env, f, t)
}
