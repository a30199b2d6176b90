package main

import (
	"context"

	"github.com/onceflow/onceflow/examples/allstages"
	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/examples/pageviews"
	kit "github.com/onceflow/onceflow/internal/cli"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

// DescribeCmd is `onceflow describe`.
type DescribeCmd struct {
	Topology string `arg:"" enum:"orders,copy,pageviews,allstages" help:"The built-in topology to describe (${enum})."`
	Input    string `name:"input" default:"orders" help:"Input topic (allstages: the topics' prefix)."`
	Output   string `name:"output" default:"customer-totals" help:"Output topic."`
	Sinks    bool   `name:"sinks" help:"Orders: include both external sinks (the webhook and the PostgreSQL rows), as 'run orders --webhook --pg' does; allstages: its two webhook sinks, as 'run allstages --webhook' does."`
	Format   string `name:"format" default:"text" enum:"text,mermaid" help:"Output format (${enum}): text, or a Mermaid flowchart."`
}

// Run prints the topology.
func (c *DescribeCmd) Run(env *Env) error {
	var t *topology.Topology
	switch c.Topology {
	case "copy":
		t = copyex.Topology(c.Input, c.Output)
	case "allstages":
		// The input flag is the topics' prefix here.
		var s allstages.Sinks
		if c.Sinks {
			none := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
			s = allstages.Sinks{Lines: none, Ticks: none}
		}
		t = allstages.Topology(c.Input, s)
	case "pageviews":
		t = pageviews.Topology(c.Input, c.Output)
	case "orders":
		if !c.Sinks {
			t = orders.Topology(c.Input, c.Output)
			break
		}
		// Describing needs the sinks' names, not their targets.
		none := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
		t = orders.TopologyWithSinks(c.Input, c.Output, orders.Sinks{Notify: none, Rows: none})
	}
	return kit.Describe(env, t, c.Format)
}
