package main

import (
	"errors"
	"strings"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/scenario"
)

// ScenarioCmd is `onceflow scenario`: end-to-end runs with replica
// processes, on a broker or an embedded one.
type ScenarioCmd struct {
	Orders    ScenarioOrdersCmd    `cmd:"" help:"Order events with their truth, three stateful replicas, one SIGKILLed and restarted on its state K times while events flow; the truth check, and a cold restore's rate."`
	Pageviews ScenarioPageviewsCmd `cmd:"" help:"The windowed example: page views with their truth, three replicas, one SIGKILLed and restarted K times; every window's final count once, every late view rejected."`
	Poison    ScenarioPoisonCmd    `cmd:"" help:"A 2 MiB record among ordinary ones, which the copy topology can never write: rejected as too-large, every other record copied once, sessions steady."`
	Sinks     ScenarioSinksCmd     `cmd:"" help:"Orders with a misbehaving webhook receiver and PostgreSQL (needs --pg or ONCEFLOW_PG_DSN), one replica SIGKILLed while deliveries are out: one effect and one row per accepted event."`
	CLI       ScenarioCLICmd       `cmd:"" name:"cli" help:"Copy throughput in both guarantees side by side, then copy with one replica SIGKILLed K times, checked read_committed."`
}

// scenarioFlags are the flags every scenario takes.
type scenarioFlags struct {
	Brokers string `name:"brokers" short:"b" placeholder:"LIST" help:"Bootstrap brokers (host:port,...). Default: an embedded broker in this process."`
	Records *int   `name:"records" short:"n" placeholder:"N" help:"Input records (default: the scenario's own)."`
	WorkDir string `name:"work-dir" type:"path" placeholder:"DIR" help:"Where the run's directory (logs, truth, reports; kept) is created (default: the system's temporary directory)."`
}

// killFlags are the flags of scenarios that SIGKILL a replica.
type killFlags struct {
	Kills *int `name:"kills" short:"k" placeholder:"K" help:"SIGKILLs of a replica (default: the scenario's own)."`
}

// config builds a scenario's configuration from the flags, with the
// scenario's default records and kills.
func (f scenarioFlags) config(env *Env, name string, kills *int) scenario.Config {
	records, k := scenario.Defaults(name)
	if f.Records != nil {
		records = *f.Records
	}
	if kills != nil {
		k = *kills
	}
	cfg := scenario.Config{Records: records, Kills: k, WorkDir: f.WorkDir, Out: env.Stdout, Logger: env.Logger}
	if f.Brokers != "" {
		cfg.Brokers = strings.Split(f.Brokers, ",")
	}
	return cfg
}

// runScenario runs it; exit 1 when a check failed.
func runScenario(env *Env, name string, cfg scenario.Config) error {
	err := scenario.Run(env.Ctx, name, cfg)
	if errors.Is(err, scenario.ErrCheckFailed) {
		return errCheckFailed
	}
	return err
}

// ScenarioOrdersCmd is `onceflow scenario orders`.
type ScenarioOrdersCmd struct {
	scenarioFlags `embed:""`
	killFlags     `embed:""`
}

// Run runs the scenario.
func (c *ScenarioOrdersCmd) Run(env *Env) error {
	return runScenario(env, "orders", c.config(env, "orders", c.Kills))
}

// ScenarioPageviewsCmd is `onceflow scenario pageviews`.
type ScenarioPageviewsCmd struct {
	scenarioFlags `embed:""`
	killFlags     `embed:""`
}

// Run runs the scenario.
func (c *ScenarioPageviewsCmd) Run(env *Env) error {
	return runScenario(env, "pageviews", c.config(env, "pageviews", c.Kills))
}

// ScenarioPoisonCmd is `onceflow scenario poison`.
type ScenarioPoisonCmd struct {
	scenarioFlags `embed:""`
	MaxSessions   int `name:"max-sessions" default:"6" help:"The most sessions a replica may start."`
}

// Run runs the scenario.
func (c *ScenarioPoisonCmd) Run(env *Env) error {
	cfg := c.config(env, "poison", nil)
	cfg.MaxSessions = c.MaxSessions
	return runScenario(env, "poison", cfg)
}

// ScenarioSinksCmd is `onceflow scenario sinks`.
type ScenarioSinksCmd struct {
	scenarioFlags  `embed:""`
	killFlags      `embed:""`
	PG             string        `name:"pg" env:"ONCEFLOW_PG_DSN" required:"" placeholder:"DSN" help:"PostgreSQL server: the run creates a database of its own there (sinks_<run id>), dropped at the end unless --keep-db. scripts/install-postgres.sh prints a DSN."`
	BadRequestRate float64       `name:"bad-request-rate" default:"0" help:"Share of requests the receiver answers 400 (permanent: dead letters, no effect)."`
	KeepDB         bool          `name:"keep-db" help:"Keep the run's database."`
	Quiet          time.Duration `name:"quiet" default:"10s" help:"Once every delivery is settled, watch this long for a further (duplicate) effect."`
}

// Run runs the scenario.
func (c *ScenarioSinksCmd) Run(env *Env) error {
	cfg := c.config(env, "sinks", c.Kills)
	cfg.PG, cfg.BadRequestRate, cfg.KeepDB, cfg.Quiet = c.PG, c.BadRequestRate, c.KeepDB, c.Quiet
	return runScenario(env, "sinks", cfg)
}

// ScenarioCLICmd is `onceflow scenario cli`.
type ScenarioCLICmd struct {
	scenarioFlags `embed:""`
	killFlags     `embed:""`
	Guarantees    []string `name:"guarantees" default:"exactly_once,at_least_once" help:"Guarantees whose throughput is measured, in order."`
}

// Run runs the scenario.
func (c *ScenarioCLICmd) Run(env *Env) error {
	cfg := c.config(env, "cli", c.Kills)
	cfg.Guarantees = c.Guarantees
	return runScenario(env, "cli", cfg)
}
