package main

import (
	kit "github.com/onceflow/onceflow/internal/cli"
)

// The command line kit's parts the commands use (package internal/cli,
// shared with the app package that a team's own binary is built with).
type (
	// Env is what every command's Run method receives.
	Env = kit.Env
	// ClientFlags are the flags of commands that connect to brokers.
	ClientFlags = kit.ClientFlags
	// ToolFlags are ClientFlags with TLS and SASL.
	ToolFlags = kit.ToolFlags
	// ReplicaFlags are the flags of every replica.
	ReplicaFlags = kit.ReplicaFlags
)

// Exit codes.
const (
	exitOK     = kit.ExitOK
	exitFailed = kit.ExitFailed
	exitError  = kit.ExitError
)

// errCheckFailed is returned by a command whose check ran and did not pass.
var errCheckFailed = kit.ErrCheckFailed
