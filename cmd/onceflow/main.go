// Command onceflow runs the embedded broker, creates topics and writes
// records to them (your own or generated ones), runs a replica of a
// built-in topology, verifies its output, shows a group's lag, benchmarks
// and demonstrates exactly-once: the commands broker, topics, produce, run,
// verify, lag, bench, demo, chaos and scenario. Each command lives in its own file and only
// turns flags into a library configuration; the work is in the libraries.
package main

import (
	"context"
	"io"
	"os"

	kit "github.com/onceflow/onceflow/internal/cli"
)

// CLI is the command line. One field per command; each command's type and
// Run method live in their own file (broker.go, produce.go, verify.go).
type CLI struct {
	kit.Globals

	Broker       BrokerCmd       `cmd:"" help:"Run the embedded Kafka-compatible broker until interrupted."`
	Produce      ProduceCmd      `cmd:"" help:"Write records to a topic: your own (--from, JSON lines) or generated ones (--records)."`
	Topics       TopicsCmd       `cmd:"" help:"Create, list and describe topics."`
	Verify       VerifyCmd       `cmd:"" help:"Check that every committed input record has an outcome (outputs naming it in their lineage, or a rejection) and none twice; or, with --truth, a built-in generator's truth."`
	Lag          LagCmd          `cmd:"" help:"Show (or wait for) a group's committed progress through a topic."`
	Groups       GroupsCmd       `cmd:"" help:"Describe consumer groups: offsets, lag and owner per partition, tasks per member."`
	Consume      ConsumeCmd      `cmd:"" help:"Print a topic's records as JSON lines (read_committed or not, keys and values decoded, headers, from an offset or a time); --rejected APP-ID for an application's rejected records with their reasons."`
	Reset        ResetCmd        `cmd:"" help:"Reset an application: input offsets to earliest, latest or a time; its repartition and changelog topics deleted; a state dir wiped. Refused while it runs."`
	Bench        BenchCmd        `cmd:"" help:"Measure a workload in exactly-once and at-least-once mode (and the peers) on one broker."`
	BenchTargets BenchTargetsCmd `cmd:"" name:"bench-targets" help:"Write TARGETS.md of a full benchmark run's directory (scripts/bench-full.sh): every performance target with its measured ratio, met or not met."`
	BenchSinks   BenchSinksCmd   `cmd:"" name:"bench-sinks" help:"Measure the sink runner: HTTP deliveries/s to a receiver answering after a delay, at several parallelisms."`

	Sinks    SinksCmd    `cmd:"" help:"Inspect external sinks: ledger counts, deliveries parked as unknown."`
	DLQ      DLQCmd      `cmd:"" name:"dlq" help:"Inspect a sink's dead letters."`
	Receiver ReceiverCmd `cmd:"" help:"Run a webhook receiver that applies each idempotency key once and misbehaves on purpose (for demos and tests)."`

	Run       RunCmd       `cmd:"" help:"Run one replica of a built-in topology until SIGINT or SIGTERM."`
	Describe  DescribeCmd  `cmd:"" help:"Print a built-in topology's graph: sources, nodes, stores, gates, sinks and topics, as text or Mermaid."`
	Probe     ProbeCmd     `cmd:"" help:"GET a URL and exit 0 on 2xx: a container health check (e.g. http://127.0.0.1:9100/healthz)."`
	Demo      DemoCmd      `cmd:"" help:"The main job on the embedded broker: produce, run three replicas, kill one, verify exactly-once."`
	Pageviews PageviewsCmd `cmd:"" help:"The windowed example's input and check: produce page views with their truth, verify the final counts."`
	Chaos     ChaosCmd     `cmd:"" help:"Run three replicas under random replica kills, pauses and broker kills; verify nothing was lost or doubled."`
	Scenario  ScenarioCmd  `cmd:"" help:"End-to-end scenarios with replica processes (orders, pageviews, poison, sinks, cli): SIGKILLs while records flow, then the checks and figures."`
}

func main() {
	ctx, stop := kit.SignalContext("onceflow", os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs the chosen command and returns the exit code:
// 0 success, 1 a check that failed (verify), 2 an error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIO(ctx, args, os.Stdin, stdout, stderr)
}

// runIO is run with the standard input given.
func runIO(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c CLI
	return kit.Program{
		Name:        "onceflow",
		Description: "A stream processor with exactly-once effects.",
		CLI:         &c,
		Globals:     &c.Globals,
	}.Exec(ctx, args, stdin, stdout, stderr)
}
