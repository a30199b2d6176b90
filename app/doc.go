// Package app turns a team's topologies into a command line with the
// commands the onceflow CLI has for its built-in examples:
//
//	run       one replica until SIGINT or SIGTERM: brokers, TLS and SASL,
//	          application and instance id, state directory, guarantee,
//	          commit interval, sink runner, metrics address (/metrics,
//	          /healthz, /readyz and a status page), log level and format;
//	          the first signal stops it cleanly within its stop bound, a
//	          second one exits at once
//	describe  the topology's graph, as text or a Mermaid flowchart
//	verify    reads the application's topics read_committed: every
//	          committed input record has an outcome (outputs naming it in
//	          their onceflow-source lineage, whatever their number and
//	          values, or a rejection in <app-id>-rejected) and none twice;
//	          windowed and punctuated outputs are counted apart; --json
//
// A whole main function:
//
//	func main() { app.Main(payments.Topology()) }
//
// The application id defaults to the topology's name; the instance id is
// --instance-id or ONCEFLOW_INSTANCE_ID. `<program> --help` lists every
// flag.
package app
