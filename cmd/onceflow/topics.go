package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/topics"
)

// TopicsCmd is `onceflow topics`.
type TopicsCmd struct {
	Create   TopicsCreateCmd   `cmd:"" help:"Create a topic."`
	List     TopicsListCmd     `cmd:"" help:"List topics; internal ones (Kafka's, and applications' repartition, changelog, rejected, outbox, dead-letter and ledger topics) are marked."`
	Describe TopicsDescribeCmd `cmd:"" help:"Describe a topic: partitions, leaders, replicas, offsets, and configs that are not defaults."`
	Delete   TopicsDeleteCmd   `cmd:"" help:"Delete topics (with --yes). An application's internal topics are refused while it runs, unless --force."`
}

// TopicsDeleteCmd is `onceflow topics delete`.
type TopicsDeleteCmd struct {
	ToolFlags `embed:""`
	Topics    []string `arg:"" help:"Topics to delete."`
	Yes       bool     `name:"yes" help:"Confirm: delete the topics and their records (without it, nothing is deleted)."`
	Force     bool     `name:"force" help:"Delete an application's internal topics (repartition, changelog, rejected, outbox, dead-letter, ledger) even while its group has members."`
}

// Run deletes the topics.
func (c *TopicsDeleteCmd) Run(env *Env) error {
	if !c.Yes {
		return fmt.Errorf("deleting %s removes its records for good: add --yes to confirm", strings.Join(c.Topics, ", "))
	}
	adm, err := connect(env, c.ToolFlags)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := adm.Delete(env.Ctx, c.Topics, c.Force); err != nil {
		return err
	}
	for _, t := range c.Topics {
		fmt.Fprintf(env.Stdout, "deleted topic %s\n", t)
	}
	return nil
}

// TopicsCreateCmd is `onceflow topics create`.
type TopicsCreateCmd struct {
	ToolFlags   `embed:""`
	Topic       string            `arg:"" help:"Topic to create."`
	Partitions  int32             `name:"partitions" short:"p" default:"1" help:"Partitions."`
	Replication int16             `name:"replication-factor" short:"r" default:"-1" help:"Replicas of each partition (-1: the broker's default.replication.factor)."`
	Config      map[string]string `name:"config" short:"c" placeholder:"KEY=VALUE" help:"Topic config, e.g. cleanup.policy=compact (repeatable)."`
}

// Run creates the topic.
func (c *TopicsCreateCmd) Run(env *Env) error {
	adm, err := connect(env, c.ToolFlags)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := adm.Create(env.Ctx, topics.Spec{Name: c.Topic, Partitions: c.Partitions, Replication: c.Replication, Configs: c.Config}); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "created topic %s (%d partitions)\n", c.Topic, c.Partitions)
	return nil
}

// TopicsListCmd is `onceflow topics list`.
type TopicsListCmd struct {
	ToolFlags `embed:""`
	JSON      bool `name:"json" help:"Print a JSON array."`
}

// Run lists the topics.
func (c *TopicsListCmd) Run(env *Env) error {
	adm, err := connect(env, c.ToolFlags)
	if err != nil {
		return err
	}
	defer adm.Close()
	ts, err := adm.List(env.Ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(env.Stdout).Encode(ts)
	}
	return topics.WriteList(env.Stdout, ts)
}

// TopicsDescribeCmd is `onceflow topics describe`.
type TopicsDescribeCmd struct {
	ToolFlags `embed:""`
	Topic     string `arg:"" help:"Topic to describe."`
	JSON      bool   `name:"json" help:"Print a JSON object."`
}

// Run describes the topic.
func (c *TopicsDescribeCmd) Run(env *Env) error {
	adm, err := connect(env, c.ToolFlags)
	if err != nil {
		return err
	}
	defer adm.Close()
	d, err := adm.Describe(env.Ctx, c.Topic)
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(env.Stdout).Encode(d)
	}
	return d.WriteText(env.Stdout)
}

// connect opens an admin client with the TLS and SASL flags.
func connect(env *Env, f ToolFlags) (*topics.Admin, error) {
	opts, err := f.ClientOptions()
	if err != nil {
		return nil, err
	}
	return topics.Connect(env.Ctx, f.BrokerList(), opts...)
}
