package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/onceflow/onceflow/internal/gen"
	"github.com/onceflow/onceflow/internal/verify"
)

// VerifyCmd is `onceflow verify`.
type VerifyCmd struct {
	ClientFlags `embed:""`

	Input    string `name:"input" short:"i" required:"" help:"Input topic."`
	Output   string `name:"output" short:"o" required:"" help:"Output topic (records carry the onceflow-source header)."`
	Truth    string `name:"truth" type:"existingfile" placeholder:"FILE" help:"Check an example's output against the truth file of 'produce --example ... --truth' instead of by lineage alone."`
	Rejected string `name:"rejected" short:"r" placeholder:"TOPIC" help:"Rejected-records topic (with --truth)."`
	JSON     bool   `name:"json" help:"Print the report as a JSON object."`
}

// Validate checks that --truth and --rejected come together.
func (c *VerifyCmd) Validate() error {
	switch {
	case c.Truth != "" && c.Rejected == "":
		return errors.New("--truth needs --rejected")
	case c.Truth == "" && c.Rejected != "":
		return errors.New("--rejected needs --truth")
	}
	return nil
}

// Run reads the topics read_committed, prints the report and fails (exit
// 1) unless the check passes: every input has exactly one output (lineage
// mode), or the output and rejections are what the truth says (--truth).
func (c *VerifyCmd) Run(env *Env) error {
	var (
		rep  any
		ok   bool
		text string
	)
	if c.Truth != "" {
		truth, err := gen.ReadTruth(c.Truth)
		if err != nil {
			return err
		}
		r, err := verify.CheckTruth(env.Ctx, c.BrokerList(), truth, c.Input, c.Output, c.Rejected)
		if err != nil {
			return err
		}
		rep, ok = r, r.OK
		text = fmt.Sprintf("%s -> %s, rejected %s:\n%s", c.Input, c.Output, c.Rejected, r)
	} else {
		r, err := verify.Lineage(env.Ctx, c.BrokerList(), c.Input, c.Output)
		if err != nil {
			return err
		}
		rep, ok = r, r.OK
		text = fmt.Sprintf("%s -> %s: %s", c.Input, c.Output, r)
	}
	if c.JSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s\n", b)
	} else {
		fmt.Fprintln(env.Stdout, text)
	}
	if !ok {
		return errCheckFailed
	}
	return nil
}
