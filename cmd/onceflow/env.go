package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/clientcfg"
	"github.com/onceflow/onceflow/internal/version"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // a check ran and did not pass
	exitError  = 2 // the command could not do its work
)

// Env is what every command's Run method receives.
type Env struct {
	// Ctx ends on SIGINT or SIGTERM.
	Ctx    context.Context
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Logger hclog.Logger
}

// Globals are the flags every command accepts.
type Globals struct {
	LogLevel  string      `name:"log-level" default:"warn" enum:"trace,debug,info,warn,error,off" help:"Log level on stderr (${enum})."`
	LogFormat string      `name:"log-format" default:"text" enum:"text,json" help:"Log format on stderr: text, or json (one JSON object a line)."`
	Version   versionFlag `name:"version" help:"Print the version (module version, commit) and exit."`
}

func (g Globals) logger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "onceflow",
		Level:      hclog.LevelFromString(g.LogLevel),
		Output:     w,
		JSONFormat: g.LogFormat == "json",
	})
}

// versionFlag prints the version before the command line is checked, so
// `onceflow --version` needs no command.
type versionFlag bool

// errVersionShown ends parsing once --version has printed.
var errVersionShown = errors.New("version shown")

// BeforeReset is kong's hook: it runs before required flags are checked.
func (versionFlag) BeforeReset(app *kong.Kong) error {
	fmt.Fprintln(app.Stdout, version.String())
	return errVersionShown
}

// ClientFlags are the flags of commands that connect to brokers.
type ClientFlags struct {
	Brokers []string `name:"brokers" short:"b" required:"" env:"ONCEFLOW_BROKERS" placeholder:"HOST:PORT" help:"Comma-separated seed brokers."`
}

// BrokerList returns the brokers with blanks trimmed and empties dropped.
func (f ClientFlags) BrokerList() []string {
	return clientcfg.ParseBrokers(strings.Join(f.Brokers, ","))
}

// ToolFlags are the flags of tooling commands that connect to brokers
// (produce, verify, lag, topics): the brokers and the same TLS and SASL
// flags as run.
type ToolFlags struct {
	ClientFlags
	SecurityFlags
}

// clientOptions are the franz-go options for the TLS and SASL flags.
func (f ToolFlags) clientOptions() ([]kgo.Opt, error) {
	tlsCfg, err := f.tlsConfig()
	if err != nil {
		return nil, err
	}
	return clientcfg.Security{TLS: tlsCfg, SASLMechanism: f.SASLMechanism, SASLUser: f.SASLUser, SASLPassword: f.SASLPassword}.Options()
}

// errCheckFailed is returned by a command whose check ran and did not pass;
// the command has already printed why.
var errCheckFailed = errors.New("check failed")

// report prints err (unless it is errCheckFailed) and returns the exit code.
func report(stderr io.Writer, err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errCheckFailed):
		return exitFailed
	default:
		fmt.Fprintf(stderr, "onceflow: %v\n", err)
		return exitError
	}
}
