// Package cli is the command-line kit shared by the onceflow command and
// by a team's own binary (package app): the flags every replica and every
// tool takes (brokers, TLS, SASL, logging), running a replica of a topology
// until SIGINT or SIGTERM with a bounded stop, and the run, describe and
// verify commands for any topology. Commands are kong structs; each one
// turns its flags into a library configuration and calls the library.
package cli
