// Package clientcfg holds what onceflow's tooling clients share: the franz-go
// options every independent client (the generator, the verifier) starts
// from, a bounded reachability probe, broker-list parsing and an hclog bridge
// for kgo's logger.
//
// These clients are deliberately not the engine's client (sarama): the
// generator and the verifier check the engine from the outside, so they must
// not share its code paths.
package clientcfg
