// Package scenario runs the end-to-end scenarios of `onceflow scenario`
// with CLI replica processes (package replicas) against a broker, or an
// embedded one started in this process:
//
//   - orders: order events with their truth, three stateful replicas, one
//     SIGKILLed and restarted on its state K times while events flow, the
//     truth check, and a cold restore's rate;
//   - pageviews: the windowed example the same way, and its final counts
//     and late records against the truth;
//   - poison: a record whose copy can never be produced among ordinary
//     ones: it is rejected as too-large, every other record copied once;
//   - sinks: orders with a misbehaving webhook receiver and PostgreSQL
//     (needs a DSN), one effect and one row per accepted event;
//   - cli: copy throughput in both guarantees, then copy under SIGKILLs.
//
// Each prints its steps and figures on Config.Out (the benchmarks parse
// the orders scenario's kill and cold-restore lines) and returns
// ErrCheckFailed when a check fails.
package scenario
