// Package archtest guards onceflow's layering: its test lists which
// packages may import which, and fails the build when a layer leaks. It has
// no code of its own; `make lint` and `go test ./...` run the rules.
//
// The rules, and why:
//
//   - topology (and topology/topologytest) never imports processor,
//     internal/engine, internal/kafka or sarama: the runtime imports the
//     graph a user builds, never the reverse, and a topology is built and
//     tested without a broker.
//   - only internal/kafka imports github.com/IBM/sarama: the engine talks to
//     Kafka through that narrow seam, so the client could be replaced behind
//     it. benchmarks/peers/sarama imports it too, on purpose: it is the bare
//     sarama copy loop the benchmark measures as the client's floor.
//   - internal/kafka never imports internal/graph, internal/taskstate,
//     internal/engine or a public package: the seam moves bytes and headers
//     (internal/wire), it does not know what a topology is.
//   - internal/kafka never imports internal/tooling/clientcfg: the replica sets up
//     its own clients (TLS, SASL), and the tooling's clients, which check it
//     from the outside, share none of its code.
//   - the runtime's code (the public packages but app, and the runtime's
//     internal packages) never imports internal/tooling or internal/testrig:
//     a replica links neither the tools that check it from the outside nor
//     the test rigs (its tests may use both).
//   - no public package (topology, serde, processor, statestore, sinks)
//     imports benchmarks or cmd: what a user imports must not drag in the
//     harness or the CLI.
//
// A rule covers a package's test files too (its own and its external
// tests), and transitive imports unless it says "directly".
package archtest
