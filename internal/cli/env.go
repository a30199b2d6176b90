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

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
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
	// Command is the program's name and the command's path ("onceflow
	// topics list"): the prefix of the command's error.
	Command string
	// JSON is set by --log-format json: every line on stderr is then a
	// JSON object (see Summary).
	JSON bool
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

// Summary prints a command's closing line on stderr whatever the log
// level: "<name>: msg" as text, or with --log-format json a JSON object
// (level info, module the command) with the key/value pairs kv.
func (e *Env) Summary(msg string, kv ...any) {
	if e.JSON {
		jsonLine(e.Stderr, e.Command, hclog.Info, msg, kv...)
		return
	}
	fmt.Fprintf(e.Stderr, "%s: %s\n", e.Name, msg)
}

// jsonLine writes one hclog JSON object on w.
func jsonLine(w io.Writer, module string, level hclog.Level, msg string, kv ...any) {
	hclog.New(&hclog.LoggerOptions{Name: module, Level: level, Output: w, JSONFormat: true}).Log(level, msg, kv...)
}

// Report prints err (unless it is ErrCheckFailed) prefixed by the
// command (its program's name and path: "onceflow lag") and returns the
// exit code. The prefix of the internal package that raised it goes: the
// command names the error's source. With json, the error is a JSON object
// (level error, module the command).
func Report(stderr io.Writer, command string, json bool, err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrCheckFailed):
		return ExitFailed
	}
	msg := withoutPackage(err.Error())
	if json {
		jsonLine(stderr, command, hclog.Error, msg)
	} else {
		fmt.Fprintf(stderr, "%s: %s\n", command, msg)
	}
	return ExitError
}

// withoutPackage drops from msg the prefix of an internal package whose
// errors reach a command (each starts its messages with its name).
// Public packages' prefixes (processor:) stay: they are the API's.
func withoutPackage(msg string) string {
	for _, p := range []string{"verify: ", "gen: ", "topics: ", "groups: ", "consume: ", "reset: ", "sinkadmin: ",
		"clientcfg: ", "demo: ", "chaos: ", "receiver: ", "embedded: ", "statedir: "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			return rest
		}
	}
	return msg
}

// commandPath is the program's name and the path of the command run
// ("onceflow topics list"), arguments left out.
func commandPath(kctx *kong.Context) string {
	var names []string
	for n := kctx.Selected(); n != nil; n = n.Parent {
		if n.Type == kong.CommandNode || n.Parent == nil {
			names = append([]string{n.Name}, names...)
		}
	}
	return strings.Join(names, " ")
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
		return Report(stderr, p.Name, false, err)
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
	json := p.Globals.LogFormat == "json"
	env := &Env{Name: p.Name, Command: commandPath(kctx), JSON: json, Ctx: ctx, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Logger: p.Globals.Logger(p.Name, stderr)}
	return Report(stderr, env.Command, json, kctx.Run(env))
}
