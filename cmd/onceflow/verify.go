package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	kit "github.com/onceflow/onceflow/internal/cli"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// VerifyCmd is `onceflow verify`.
type VerifyCmd struct {
	ToolFlags `embed:""`

	Input    []string      `name:"input" short:"i" required:"" help:"Input topics (comma-separated or repeated)."`
	Output   []string      `name:"output" short:"o" required:"" help:"Output topics (their records carry the onceflow-source header), outbox topics included."`
	Rejected string        `name:"rejected" short:"r" placeholder:"TOPIC" help:"The application's rejected-records topic (<app-id>-rejected): a rejection is an input's outcome. Required with --truth."`
	Windowed []string      `name:"windowed" placeholder:"TOPIC" help:"Output topics written by a windowed aggregation: counted apart (a window's result has no single input)."`
	MayDrop  []string      `name:"may-drop" placeholder:"TOPIC" help:"Input topics whose records may rightly have no outcome (the topology filters them, or only aggregates them into windows)."`
	Truth    string        `name:"truth" type:"existingfile" placeholder:"FILE" help:"Check a built-in generator's output against the truth file of 'produce --example ... --truth' instead of by lineage alone (one input, one output)."`
	JSON     bool          `name:"json" help:"Print the report as a JSON object."`
	Timeout  time.Duration `name:"timeout" default:"2m" help:"Give up with an error after this long (reading the topics to their last stable offsets)."`
}

// Validate checks the flags that go together.
func (c *VerifyCmd) Validate() error {
	switch {
	case c.Truth != "" && c.Rejected == "":
		return errors.New("--truth needs --rejected")
	case c.Truth != "" && (len(c.Input) != 1 || len(c.Output) != 1):
		return errors.New("--truth checks one --input and one --output")
	case c.Timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	return nil
}

// Run reads the topics read_committed, prints the report and fails (exit
// 1) unless the check passes: every committed input record has an outcome
// (outputs naming it in their lineage, or a rejection) and none twice, or,
// with --truth, the output and rejections are what the truth says. It
// gives up after --timeout with an error saying so.
func (c *VerifyCmd) Run(env *Env) error {
	return kit.WithTimeout(env, c.Timeout, func(ctx context.Context) error { return c.check(ctx, env) })
}

func (c *VerifyCmd) check(ctx context.Context, env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	if c.Truth == "" {
		spec := verify.Spec{Inputs: c.Input, Outputs: c.Output, Windowed: c.Windowed, Rejected: c.Rejected, MayDrop: c.MayDrop}
		rep, err := verify.Outcomes(ctx, c.BrokerList(), spec, opts...)
		if err != nil {
			return err
		}
		return kit.PrintOutcomes(env, spec, rep, c.JSON)
	}
	truth, err := gen.ReadTruth(c.Truth)
	if err != nil {
		return err
	}
	in, out := c.Input[0], c.Output[0]
	r, err := verify.CheckTruth(ctx, c.BrokerList(), truth, in, out, c.Rejected, opts...)
	if err != nil {
		return err
	}
	if c.JSON {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s\n", b)
	} else {
		fmt.Fprintf(env.Stdout, "%s -> %s, rejected %s:\n%s\n", in, out, c.Rejected, r)
	}
	if !r.OK {
		return errCheckFailed
	}
	return nil
}
