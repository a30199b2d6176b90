package main

import (
	"fmt"
	"io"
	"time"

	"github.com/onceflow/onceflow/internal/gen"
)

// ProduceCmd is `onceflow produce`.
type ProduceCmd struct {
	ClientFlags `embed:""`

	Topic      string `name:"topic" short:"t" required:"" help:"Topic to write (created when missing)."`
	Records    int    `name:"records" short:"n" required:"" help:"How many records to write."`
	Partitions int    `name:"partitions" default:"6" help:"Partitions of the topic when it is created."`
	Keys       int    `name:"keys" default:"1000" help:"Distinct keys."`
	ValueSize  int    `name:"value-size" default:"0" help:"Pad values to this many bytes (0: short values)."`
	NoProgress bool   `name:"no-progress" help:"Do not show a progress bar on stderr."`
}

// Run writes the records and prints a summary.
func (c *ProduceCmd) Run(env *Env) error {
	var progress io.Writer = env.Stderr
	if c.NoProgress {
		progress = nil
	}
	res, err := gen.Produce(env.Ctx, gen.Config{
		Brokers:    c.BrokerList(),
		Topic:      c.Topic,
		Records:    c.Records,
		Partitions: c.Partitions,
		Keys:       c.Keys,
		ValueSize:  c.ValueSize,
		Progress:   progress,
		Logger:     env.Logger,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "produced %d records to %s (%d partitions) in %s: %.0f records/s (run %s)\n",
		res.Records, c.Topic, res.Partitions, res.Duration.Round(time.Millisecond), res.RecordsPerSec, res.RunID)
	return nil
}
