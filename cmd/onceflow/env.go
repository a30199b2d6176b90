package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/clientcfg"
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
	Stdout io.Writer
	Stderr io.Writer
	Logger hclog.Logger
}

// Globals are the flags every command accepts.
type Globals struct {
	LogLevel string `name:"log-level" default:"warn" enum:"trace,debug,info,warn,error,off" help:"Log level on stderr (${enum})."`
}

func (g Globals) logger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "onceflow",
		Level:  hclog.LevelFromString(g.LogLevel),
		Output: w,
	})
}

// ClientFlags are the flags of commands that connect to brokers.
type ClientFlags struct {
	Brokers []string `name:"brokers" short:"b" required:"" env:"ONCEFLOW_BROKERS" placeholder:"HOST:PORT" help:"Comma-separated seed brokers."`
}

// BrokerList returns the brokers with blanks trimmed and empties dropped.
func (f ClientFlags) BrokerList() []string {
	return clientcfg.ParseBrokers(strings.Join(f.Brokers, ","))
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
