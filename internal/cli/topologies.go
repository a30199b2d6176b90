package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/topology"
)

// Topologies are the topologies a program built with the kit runs, by
// name (topology.Topology.Name).
type Topologies []*topology.Topology

// Pick returns the topology named name; with name empty, the only one.
func (ts Topologies) Pick(name string) (*topology.Topology, error) {
	var names []string
	for _, t := range ts {
		if t == nil {
			continue
		}
		if t.Name() == name || name == "" && len(ts) == 1 {
			return t, nil
		}
		names = append(names, t.Name())
	}
	switch {
	case len(names) == 0:
		return nil, errors.New("no topology given")
	case name == "":
		return nil, fmt.Errorf("name the topology: one of %s", strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("no topology %q: one of %s", name, strings.Join(names, ", "))
}

// RunCmd runs one replica of a topology until SIGINT or SIGTERM.
type RunCmd struct {
	Topology string `arg:"" optional:"" help:"The topology to run (may be left out when the program has one)."`
	ReplicaFlags
}

// Run runs the replica.
func (c *RunCmd) Run(env *Env, ts Topologies) error {
	t, err := ts.Pick(c.Topology)
	if err != nil {
		return err
	}
	return RunReplica(env, c.ReplicaFlags, t)
}

// DescribeCmd prints a topology's graph.
type DescribeCmd struct {
	Topology string `arg:"" optional:"" help:"The topology to describe (may be left out when the program has one)."`
	Format   string `name:"format" default:"text" enum:"text,mermaid" help:"Output format (${enum}): text, or a Mermaid flowchart."`
}

// Run prints the topology.
func (c *DescribeCmd) Run(env *Env, ts Topologies) error {
	t, err := ts.Pick(c.Topology)
	if err != nil {
		return err
	}
	return Describe(env, t, c.Format)
}

// Describe prints t as text or as a Mermaid flowchart (format "mermaid").
func Describe(env *Env, t *topology.Topology, format string) error {
	out := t.Describe()
	if format == "mermaid" {
		out = t.DescribeMermaid()
	}
	_, err := fmt.Fprint(env.Stdout, out)
	return err
}

// VerifyCmd checks an application's committed output against its
// committed input: every input record has an outcome, once.
type VerifyCmd struct {
	Topology string `arg:"" optional:"" help:"The topology whose application to verify (may be left out when the program has one)."`
	ToolFlags
	AppID   string        `name:"app-id" help:"Application id, which names the rejected-records topic <app-id>-rejected and the outbox topics (default: the topology's name)."`
	JSON    bool          `name:"json" help:"Print the report as a JSON object."`
	Timeout time.Duration `name:"timeout" default:"2m" help:"Give up with an error after this long (reading the topics to their last stable offsets)."`
}

// Run reads the application's topics read_committed, prints the report and
// fails (exit 1) unless every input has its outcome once.
func (c *VerifyCmd) Run(env *Env, ts Topologies) error {
	t, err := ts.Pick(c.Topology)
	if err != nil {
		return err
	}
	appID := c.AppID
	if appID == "" {
		appID = t.Name()
	}
	g, err := graph.Compile(t)
	if err != nil {
		return err
	}
	spec := verify.SpecOf(g.WithPrefix(appID), appID+"-rejected")
	spec.Group = appID
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	return WithTimeout(env, c.Timeout, func(ctx context.Context) error {
		rep, err := verify.Outcomes(ctx, c.BrokerList(), spec, opts...)
		if err != nil {
			return err
		}
		return PrintOutcomes(env, spec, rep, c.JSON)
	})
}

// WithTimeout runs fn with env.Ctx bounded by timeout; an error after the
// timeout says so.
func WithTimeout(env *Env, timeout time.Duration, fn func(ctx context.Context) error) error {
	if timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(env.Ctx, timeout)
	defer cancel()
	err := fn(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && env.Ctx.Err() == nil {
		return fmt.Errorf("verify: gave up after --timeout %v: %w", timeout, err)
	}
	return err
}

// PrintOutcomes prints an outcome report, as text (the topics, the counts
// per output topic, the verdict) or as one JSON object, and returns
// ErrCheckFailed when the check did not pass.
func PrintOutcomes(env *Env, spec verify.Spec, rep verify.OutcomeReport, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(struct {
			Spec verify.Spec `json:"spec"`
			verify.OutcomeReport
		}{spec, rep})
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s\n", b)
	} else {
		fmt.Fprintf(env.Stdout, "%s -> %s", strings.Join(spec.Inputs, ","), strings.Join(spec.Outputs, ","))
		if spec.Rejected != "" {
			fmt.Fprintf(env.Stdout, ", rejected %s", spec.Rejected)
		}
		fmt.Fprintln(env.Stdout, ":")
		for _, tc := range rep.Topics {
			fmt.Fprintf(env.Stdout, "  %s: %d records", tc.Topic, tc.Records)
			if tc.Windowed > 0 {
				fmt.Fprintf(env.Stdout, ", %d windowed", tc.Windowed)
			}
			if tc.Punctuated > 0 {
				fmt.Fprintf(env.Stdout, ", %d punctuated", tc.Punctuated)
			}
			if tc.Purged > 0 {
				fmt.Fprintf(env.Stdout, " (%d purged, in the delivery ledger)", tc.Purged)
			}
			if tc.Unexpected > 0 {
				fmt.Fprintf(env.Stdout, ", %d unexpected", tc.Unexpected)
			}
			fmt.Fprintln(env.Stdout)
		}
		fmt.Fprintln(env.Stdout, rep)
	}
	if !rep.OK {
		return ErrCheckFailed
	}
	return nil
}
