package main

import (
	"errors"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/consume"
)

// ConsumeCmd is `onceflow consume`.
type ConsumeCmd struct {
	ToolFlags `embed:""`

	Topic       string `name:"topic" short:"t" xor:"what" help:"Topic to read."`
	Rejected    string `name:"rejected" placeholder:"APP-ID" xor:"what" help:"Read the application's rejected records (<app-id>-rejected), with their reason, node, error and lineage as fields."`
	From        string `name:"from" default:"earliest" help:"Where each partition starts: earliest, latest, an offset, or an RFC 3339 time (the first record at or after it)."`
	Follow      bool   `name:"follow" short:"f" help:"Keep reading new records until interrupted (default: stop at the topic's ends as they were at the start)."`
	Max         int    `name:"max" short:"n" help:"Stop after this many records (0: no limit)."`
	Key         string `name:"key-format" default:"string" enum:"string,bytes,json,int64,int32,int16,float64,float32,uuid" help:"Format of keys (${enum}); bytes print as base64."`
	Value       string `name:"value-format" default:"string" enum:"string,bytes,json,int64,int32,int16,float64,float32,uuid" help:"Format of values (${enum})."`
	Uncommitted bool   `name:"read-uncommitted" help:"Read records of open and aborted transactions too (default: read_committed)."`
}

// Validate checks that a topic is named.
func (c *ConsumeCmd) Validate() error {
	if c.Topic == "" && c.Rejected == "" {
		return errors.New("name a --topic or --rejected APP-ID")
	}
	return nil
}

// Run prints the records as JSON lines on stdout.
func (c *ConsumeCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	cfg := consume.Config{
		Brokers: c.BrokerList(), Topic: c.Topic, Uncommitted: c.Uncommitted, From: c.From, Follow: c.Follow,
		Max: c.Max, Key: c.Key, Value: c.Value, Extra: opts,
	}
	if c.Rejected != "" {
		cfg.Topic, cfg.Rejected = c.Rejected+"-rejected", true
	}
	n, err := consume.Run(env.Ctx, cfg, env.Stdout)
	env.Logger.Info("consumed", "topic", cfg.Topic, "records", n)
	return err
}
