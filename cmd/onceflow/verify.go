package main

import (
	"encoding/json"
	"fmt"

	"github.com/onceflow/onceflow/internal/verify"
)

// VerifyCmd is `onceflow verify`.
type VerifyCmd struct {
	ClientFlags `embed:""`

	Input  string `name:"input" short:"i" required:"" help:"Input topic."`
	Output string `name:"output" short:"o" required:"" help:"Output topic (records carry the onceflow-source header)."`
	JSON   bool   `name:"json" help:"Print the report as a JSON object."`
}

// Run reads both topics read_committed, prints the report and fails (exit
// 1) unless every input has exactly one output.
func (c *VerifyCmd) Run(env *Env) error {
	rep, err := verify.Lineage(env.Ctx, c.BrokerList(), c.Input, c.Output)
	if err != nil {
		return err
	}
	if c.JSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s\n", b)
	} else {
		fmt.Fprintf(env.Stdout, "%s -> %s: %s\n", c.Input, c.Output, rep)
	}
	if !rep.OK {
		return errCheckFailed
	}
	return nil
}
