package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/chaos"
)

// ChaosCmd is `onceflow chaos`.
type ChaosCmd struct {
	Brokers      string        `name:"brokers" short:"b" placeholder:"LIST" help:"Bootstrap brokers (host:port,...) to run against; with --cluster-dir, instead of the cluster's own list."`
	ClusterDir   string        `name:"cluster-dir" type:"path" placeholder:"DIR" help:"ONCEFLOW_KAFKA_DIR of a cluster of 'scripts/kafka.sh up --brokers N': its brokers are killed and restarted."`
	KafkaScript  string        `name:"kafka-script" type:"path" default:"scripts/kafka.sh" help:"The script that kills and starts the cluster's nodes."`
	Embedded     bool          `name:"embedded" help:"Run against an embedded broker (no broker faults)."`
	Topology     string        `name:"topology" default:"orders" enum:"orders,allstages" help:"The topology the replicas run (${enum}): orders, or allstages (every kind of stage, two webhook sinks delivered to a receiver of the run that is not idempotent, operator commands among the faults)."`
	Duration     time.Duration `name:"duration" default:"60s" help:"How long faults are injected."`
	Rate         float64       `name:"rate" default:"1000" help:"Input records per second (the run writes rate × duration records)."`
	Seed         int64         `name:"seed" default:"1" help:"Seed of the faults and the input."`
	MinInterval  time.Duration `name:"min-interval" default:"2s" help:"Shortest pause between two faults."`
	MaxInterval  time.Duration `name:"max-interval" default:"8s" help:"Longest pause between two faults."`
	DrainTimeout time.Duration `name:"drain-timeout" default:"3m" help:"After the faults, wait at most this long until all input is committed."`
	Faults       string        `name:"faults" placeholder:"KIND,..." help:"Fault kinds to inject, dealt like a shuffled deck (name one twice to inject it twice as often): replica-kill, replica-pause, network, broker-kill (cluster), request-fault (embedded), operator-command (allstages) (default: all that apply)."`
	Chart        string        `name:"chart" type:"path" placeholder:"FILE.svg" help:"Write an SVG chart of committed input records per second with the faults marked."`
	ReplicaArgs  []string      `name:"replica-arg" placeholder:"FLAG" help:"Pass FLAG to every replica's 'run orders' or 'run allstages' (repeatable), e.g. --replica-arg=--guarantee=at_least_once to see the check fail."`
	KeepLogs     bool          `name:"keep-logs" help:"Keep the replicas' logs and state (kept anyway when the run fails)."`
	JSON         bool          `name:"json" help:"Print the result as one JSON object."`
	JSONOut      string        `name:"json-out" type:"path" placeholder:"FILE" help:"Also write the result as JSON to FILE (the report still printed)."`
}

// Run runs the chaos test; exit 0 only when nothing was lost or doubled
// and rejections and totals equal the truth.
func (c *ChaosCmd) Run(env *Env) error {
	cfg := chaos.Config{Topology: c.Topology, ClusterDir: c.ClusterDir, KafkaScript: c.KafkaScript, Embedded: c.Embedded,
		Duration: c.Duration, Rate: c.Rate, Seed: c.Seed, MinInterval: c.MinInterval, MaxInterval: c.MaxInterval,
		DrainTimeout: c.DrainTimeout, ReplicaArgs: c.ReplicaArgs, Chart: c.Chart, KeepLogs: c.KeepLogs, Progress: env.Stderr, Logger: env.Logger}
	if c.Brokers != "" {
		cfg.Brokers = strings.Split(c.Brokers, ",")
	}
	if c.Faults != "" {
		cfg.Faults = strings.Split(c.Faults, ",")
	}
	res, err := chaos.Run(env.Ctx, cfg)
	if err != nil {
		if res.Dir != "" {
			return fmt.Errorf("%w (logs in %s)", err, res.Dir)
		}
		return err
	}
	if c.JSONOut != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.JSONOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("chaos: %w", err)
		}
	}
	if c.JSON {
		if err := json.NewEncoder(env.Stdout).Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprint(env.Stdout, res)
	}
	if !res.OK {
		return errCheckFailed
	}
	return nil
}
