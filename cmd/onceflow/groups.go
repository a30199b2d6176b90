package main

import (
	"encoding/json"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/groups"
)

// GroupsCmd is `onceflow groups`.
type GroupsCmd struct {
	Describe GroupsDescribeCmd `cmd:"" help:"Describe a consumer group (an application's --app-id): per partition its committed, last stable and end offsets, lag and owner; per member its instance, tasks and partitions."`
}

// GroupsDescribeCmd is `onceflow groups describe`.
type GroupsDescribeCmd struct {
	ToolFlags `embed:""`

	Group string `arg:"" help:"Consumer group (a topology's --app-id)."`
	JSON  bool   `name:"json" help:"Print the description as a JSON object."`
}

// Run prints the group's description.
func (c *GroupsDescribeCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	d, err := groups.Describe(env.Ctx, c.BrokerList(), c.Group, opts...)
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(env.Stdout).Encode(d)
	}
	return d.WriteText(env.Stdout)
}
