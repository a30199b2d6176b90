package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/onceflow/onceflow/examples/pageviews"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// RunPageviewsCmd is `onceflow run pageviews`.
type RunPageviewsCmd struct {
	ReplicaFlags
	Input  string `name:"input" required:"" help:"Input topic of page views (keyed by user, JSON {user, page, at})."`
	Output string `name:"output" required:"" help:"Output topic of final counts per user and hour (created when missing)."`
}

// Run runs the replica.
func (c *RunPageviewsCmd) Run(env *Env) error {
	return runReplica(env, c.ReplicaFlags, pageviews.Topology(c.Input, c.Output))
}

// PageviewsCmd is `onceflow pageviews`: the windowed example's input and
// its check.
type PageviewsCmd struct {
	Produce PageviewsProduceCmd `cmd:"" help:"Write page views (5 % out of order within grace, 1 % beyond it) and their truth."`
	Verify  PageviewsVerifyCmd  `cmd:"" help:"Check the final counts and the late records against the truth."`
}

// PageviewsProduceCmd is `onceflow pageviews produce`.
type PageviewsProduceCmd struct {
	ToolFlags  `embed:""`
	Topic      string        `name:"topic" short:"t" required:"" help:"Input topic (created when missing; must be empty)."`
	Events     int           `name:"events" short:"n" default:"1000000" help:"Page views to write."`
	Partitions int           `name:"partitions" default:"6" help:"Partitions of a topic created."`
	Users      int           `name:"users" default:"200" help:"Users (record keys)."`
	Step       time.Duration `name:"step" default:"200ms" help:"Event time between two views."`
	OutOfOrder float64       `name:"out-of-order" default:"0.05" help:"Fraction of views moved back within the grace period."`
	Late       float64       `name:"late" default:"0.01" help:"Fraction of views moved back beyond it."`
	Seed       int64         `name:"seed" default:"1" help:"Seed: the same flags write the same records."`
	Rate       float64       `name:"rate" help:"Records per second (0: as fast as the broker takes them)."`
	Truth      string        `name:"truth" required:"" type:"path" placeholder:"FILE" help:"Write the truth here (for 'pageviews verify')."`
	NoProgress bool          `name:"no-progress" help:"No progress bar."`
}

// Run writes the views and the truth.
func (c *PageviewsProduceCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	var progress io.Writer = env.Stderr
	if c.NoProgress {
		progress = nil
	}
	rate := func(f float64) float64 { // the flag's 0 means none; the config's, the default
		if f == 0 {
			return -1
		}
		return f
	}
	began := time.Now()
	truth, err := gen.ProducePageviews(env.Ctx, gen.PageviewsConfig{
		Brokers: c.BrokerList(), ClientOptions: opts, Topic: c.Topic, Partitions: c.Partitions,
		Events: c.Events, Users: c.Users, Step: c.Step, OutOfOrderRate: rate(c.OutOfOrder), LateRate: rate(c.Late),
		Seed: c.Seed, Rate: c.Rate, Progress: progress, Logger: env.Logger,
	})
	if err != nil {
		return err
	}
	if err := truth.WriteFile(c.Truth); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "produced %d page views to %s (%d partitions, %d users, seed %d) in %s\n",
		truth.Events, truth.Topic, truth.Partitions, truth.Users, truth.Seed, time.Since(began).Round(time.Millisecond))
	fmt.Fprintf(env.Stdout, "truth: %d windows, %d out of order within grace, %d late; written to %s\n",
		len(truth.Windows), truth.OutOfOrder, truth.Late, c.Truth)
	return nil
}

// PageviewsVerifyCmd is `onceflow pageviews verify`.
type PageviewsVerifyCmd struct {
	ToolFlags `embed:""`
	Output    string        `name:"output" short:"o" required:"" help:"Output topic of final counts."`
	Rejected  string        `name:"rejected" short:"r" required:"" help:"Rejected-records topic (<app-id>-rejected)."`
	Truth     string        `name:"truth" required:"" type:"existingfile" placeholder:"FILE" help:"Truth file of 'pageviews produce'."`
	JSON      bool          `name:"json" help:"Print the report as a JSON object."`
	Timeout   time.Duration `name:"timeout" default:"2m" help:"Give up after this long."`
}

// Run reads both topics read_committed and fails (exit 1) unless every
// window's final count appears once and equals the truth and the late
// records are the truth's.
func (c *PageviewsVerifyCmd) Run(env *Env) error {
	truth, err := gen.ReadPageviewsTruth(c.Truth)
	if err != nil {
		return err
	}
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(env.Ctx, c.Timeout)
	defer cancel()
	r, err := verify.CheckPageviews(ctx, c.BrokerList(), truth, c.Output, c.Rejected, opts...)
	if err != nil {
		return err
	}
	if c.JSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(env.Stdout, string(b))
	} else {
		fmt.Fprintf(env.Stdout, "%s, rejected %s:\n%s\n", c.Output, c.Rejected, r)
	}
	if !r.OK {
		return errors.New("pageviews verify: the output does not match the truth")
	}
	return nil
}
