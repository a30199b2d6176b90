package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/internal/gen"
	"github.com/onceflow/onceflow/internal/verify"
)

// VerifyCmd is `onceflow verify`.
type VerifyCmd struct {
	ToolFlags `embed:""`

	Input    string        `name:"input" short:"i" required:"" help:"Input topic."`
	Output   string        `name:"output" short:"o" required:"" help:"Output topic (records carry the onceflow-source header)."`
	Truth    string        `name:"truth" type:"existingfile" placeholder:"FILE" help:"Check an example's output against the truth file of 'produce --example ... --truth' instead of by lineage alone."`
	Rejected string        `name:"rejected" short:"r" placeholder:"TOPIC" help:"Rejected-records topic (with --truth)."`
	JSON     bool          `name:"json" help:"Print the report as a JSON object."`
	Timeout  time.Duration `name:"timeout" default:"2m" help:"Give up with an error after this long (reading the topics to their last stable offsets)."`
}

// Validate checks that --truth and --rejected come together.
func (c *VerifyCmd) Validate() error {
	switch {
	case c.Truth != "" && c.Rejected == "":
		return errors.New("--truth needs --rejected")
	case c.Truth == "" && c.Rejected != "":
		return errors.New("--rejected needs --truth")
	case c.Timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	return nil
}

// Run reads the topics read_committed, prints the report and fails (exit
// 1) unless the check passes: every input has exactly one output (lineage
// mode), or the output and rejections are what the truth says (--truth).
// It gives up after --timeout with an error saying so.
func (c *VerifyCmd) Run(env *Env) error {
	ctx, cancel := context.WithTimeout(env.Ctx, c.Timeout)
	defer cancel()
	err := c.check(ctx, env)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && env.Ctx.Err() == nil {
		return fmt.Errorf("verify: gave up after --timeout %v: %w", c.Timeout, err)
	}
	return err
}

func (c *VerifyCmd) check(ctx context.Context, env *Env) error {
	opts, err := c.clientOptions()
	if err != nil {
		return err
	}
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
		r, err := verify.CheckTruth(ctx, c.BrokerList(), truth, c.Input, c.Output, c.Rejected, opts...)
		if err != nil {
			return err
		}
		rep, ok = r, r.OK
		text = fmt.Sprintf("%s -> %s, rejected %s:\n%s", c.Input, c.Output, c.Rejected, r)
	} else {
		r, err := verify.Lineage(ctx, c.BrokerList(), c.Input, c.Output, opts...)
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
