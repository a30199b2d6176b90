package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/benchmarks"
)

// BenchSinksCmd is `onceflow bench-sinks`.
type BenchSinksCmd struct {
	ClientFlags
	Deliveries       int           `name:"deliveries" short:"n" default:"50000" help:"Deliveries per run."`
	SerialDeliveries int           `name:"serial-deliveries" default:"3000" help:"Deliveries of the run at parallelism 1 (slow: one attempt out per partition)."`
	Parallelism      []int         `name:"parallelism" default:"1,16,64" help:"Parallelism values to run, comma-separated (attempts out per outbox partition, each for another key)."`
	Partitions       int           `name:"partitions" default:"6" help:"Partitions of the outbox topic."`
	Keys             int           `name:"keys" default:"10000" help:"Distinct record keys (one key's deliveries go one after the other)."`
	Delay            time.Duration `name:"delay" default:"20ms" help:"The receiver's answer time."`
	Profile          string        `name:"profile" type:"path" placeholder:"DIR" help:"Write a CPU profile of each run into DIR."`
	JSON             bool          `name:"json" help:"Print one JSON object instead of a table."`
}

// Run runs the benchmark and prints the report.
func (c *BenchSinksCmd) Run(env *Env) error {
	rep, err := benchmarks.BenchSinks(env.Ctx, benchmarks.SinksConfig{
		Brokers: c.BrokerList(), Deliveries: c.Deliveries, SerialDeliveries: c.SerialDeliveries, Keys: c.Keys,
		Partitions: c.Partitions, Parallelism: c.Parallelism, Delay: c.Delay, Profile: c.Profile, Logger: env.Logger,
	})
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(env.Stdout).Encode(rep)
	}
	fmt.Fprintf(env.Stdout, "HTTP sink to the receiver answering in %v; %d outbox partitions, %d keys; one process, one run each\n",
		c.Delay, rep.Partitions, rep.Keys)
	fmt.Fprintf(env.Stdout, "%-12s %11s %9s %14s %15s %9s\n", "parallelism", "deliveries", "seconds", "deliveries/s", "ceiling/s", "speedup")
	for i, r := range rep.Runs {
		fmt.Fprintf(env.Stdout, "%-12d %11d %9.1f %14.0f %15.0f %8.1fx\n", r.Parallelism, r.Deliveries, r.Seconds, r.PerSecond, r.Ceiling, rep.Speedup[i])
	}
	fmt.Fprintln(env.Stdout, "ceiling: attempts out at once (parallelism x partitions) / answer time. Absolute figures drift on a shared machine: compare within one run.")
	return nil
}
