package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/onceflow/onceflow/internal/cli"
	"github.com/onceflow/onceflow/topology"
)

// Config is a team's command line. The zero value (but for Topologies)
// is a usable default.
type Config struct {
	// Name is the program's name in usage and messages (default: the
	// base name of os.Args[0]).
	Name string
	// Description is the one-line summary of the program's help (default:
	// a sentence naming the topologies' commands).
	Description string
	// Topologies are the topologies the program runs; the commands take
	// one by its name (topology.New's), or none when there is only one.
	Topologies []*topology.Topology
}

// Main is Config{Topologies: ts}.Main(): the whole main function of a
// team's binary.
func Main(ts ...*topology.Topology) {
	Config{Topologies: ts}.Main()
}

// Main runs the command line of os.Args until it is done and exits with
// its code: 0 success, 1 a check that did not pass (verify), 2 an error.
// The first SIGINT or SIGTERM stops a running replica cleanly, within its
// stop bound; a second one exits at once.
func (c Config) Main() {
	name := c.name()
	ctx, stop := cli.SignalContext(name, os.Stderr)
	code := c.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run runs the command line args until it is done or ctx ends and
// returns the exit code, as Main does; for tests and for programs that
// handle signals themselves.
func (c Config) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var cmds commands
	desc := c.Description
	if desc == "" {
		desc = "Run, describe and verify onceflow topologies: " + topologyNames(c.Topologies) + "."
	}
	return cli.Program{
		Name:        c.name(),
		Description: desc,
		CLI:         &cmds,
		Globals:     &cmds.Globals,
		Bind:        []any{cli.Topologies(c.Topologies)},
	}.Exec(ctx, args, stdin, stdout, stderr)
}

func (c Config) name() string {
	if c.Name != "" {
		return c.Name
	}
	return filepath.Base(os.Args[0])
}

// commands is the command line of a program built with the kit.
type commands struct {
	cli.Globals

	Run      cli.RunCmd      `cmd:"" help:"Run one replica of a topology until SIGINT or SIGTERM (then commit or abort, leave the group, and stop within the stop bound)."`
	Describe cli.DescribeCmd `cmd:"" help:"Print a topology's graph: sources, nodes, stores, gates, sinks and topics, as text or Mermaid."`
	Verify   cli.VerifyCmd   `cmd:"" help:"Check an application's committed output: every committed input record has an outcome (outputs naming it in their lineage, or a rejection), and none twice."`
}

func topologyNames(ts []*topology.Topology) string {
	var names []string
	for _, t := range ts {
		if t != nil {
			names = append(names, t.Name())
		}
	}
	return strings.Join(names, ", ")
}
