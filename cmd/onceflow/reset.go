package main

import (
	"encoding/json"
	"io"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/reset"
)

// ResetCmd is `onceflow reset`.
type ResetCmd struct {
	ToolFlags `embed:""`

	AppID    string   `name:"app-id" required:"" help:"Application id: its consumer group and the prefix of its internal topics."`
	Inputs   []string `name:"input" placeholder:"TOPIC" help:"Input topics whose offsets move (repeatable or comma-separated). Default: every topic the group has committed offsets on that is not one of the application's own."`
	To       string   `name:"to" default:"earliest" help:"Where the inputs start again: earliest, latest (every committed record skipped) or an RFC 3339 time (the first record at or after it)."`
	StateDir string   `name:"state-dir" type:"path" help:"This machine's state dir of the application (a replica's --state-dir), wiped. Refused while a process holds it."`
	DryRun   bool     `name:"dry-run" help:"Print what the reset would do; change nothing."`
	JSON     bool     `name:"json" help:"Print the plan as a JSON object (after the text, on the last line)."`
}

// Run resets the application.
func (c *ResetCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	var w io.Writer = env.Stdout
	if c.JSON {
		w = io.Discard
	}
	plan, err := reset.Run(env.Ctx, reset.Config{
		Brokers: c.BrokerList(), Extra: opts, AppID: c.AppID, Inputs: c.Inputs, To: c.To,
		StateDir: c.StateDir, DryRun: c.DryRun,
	}, w)
	if err != nil {
		return err
	}
	env.Logger.Info("reset", "app", c.AppID, "offsets", len(plan.Moves), "deleted_topics", len(plan.Delete), "dry_run", c.DryRun)
	if c.JSON {
		return json.NewEncoder(env.Stdout).Encode(plan)
	}
	return nil
}
