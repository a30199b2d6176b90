package cli

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
	ExitOK     = 0
	ExitFailed = 1 // a check ran and did not pass
	ExitError  = 2 // the command could not do its work
)

// Env is what every command's Run method receives.
type Env struct {
	// Name is the program's name, the prefix of its messages.
	Name string
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

// Logger is the logger the flags ask for, named name, writing to w.
func (g Globals) Logger(name string, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
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

// ClientOptions are the franz-go options for the TLS and SASL flags.
func (f ToolFlags) ClientOptions() ([]kgo.Opt, error) {
	tlsCfg, err := f.TLSConfig()
	if err != nil {
		return nil, err
	}
	return clientcfg.Security{TLS: tlsCfg, SASLMechanism: f.SASLMechanism, SASLUser: f.SASLUser, SASLPassword: f.SASLPassword}.Options()
}

// ErrCheckFailed is returned by a command whose check ran and did not
// pass; the command has already printed why.
var ErrCheckFailed = errors.New("check failed")

// Report prints err (unless it is ErrCheckFailed) prefixed by the
// program's name and returns the exit code.
func Report(stderr io.Writer, name string, err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrCheckFailed):
		return ExitFailed
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitError
	}
}

// Program is a command line to parse and run.
type Program struct {
	// Name is the program's name in usage and error messages.
	Name        string
	Description string
	// CLI is a pointer to the kong struct of commands; it must embed
	// Globals, which Globals points to.
	CLI     any
	Globals *Globals
	// Bind are further values commands' Run methods may take.
	Bind []any
}

// Exec parses args, runs the chosen command with an Env and returns the
// exit code: 0 success, 1 a check that failed (verify), 2 an error.
func (p Program) Exec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts := []kong.Option{
		kong.Name(p.Name),
		kong.Description(p.Description),
		kong.Writers(stdout, stderr),
	}
	if len(p.Bind) > 0 {
		opts = append(opts, kong.Bind(p.Bind...))
	}
	parser, err := kong.New(p.CLI, opts...)
	if err != nil {
		return Report(stderr, p.Name, err)
	}
	kctx, err := parser.Parse(args)
	if errors.Is(err, errVersionShown) {
		return ExitOK
	}
	if err != nil {
		var perr *kong.ParseError
		if errors.As(err, &perr) && perr.Context != nil {
			_ = perr.Context.PrintUsage(true)
			fmt.Fprintln(stderr)
		}
		parser.Errorf("%s", err)
		return ExitError
	}
	env := &Env{Name: p.Name, Ctx: ctx, Stdin: stdin, Stdout: stdout, Stderr: stderr, Logger: p.Globals.Logger(p.Name, stderr)}
	return Report(stderr, p.Name, kctx.Run(env))
}
