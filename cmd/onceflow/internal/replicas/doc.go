// Package replicas starts and stops `onceflow run ...` replica processes
// for the demo, chaos and the scenarios: each replica has its own log,
// state directory and metrics port, and can be SIGKILLed, SIGSTOPped,
// continued, restarted on its own state (same instance id, directory and
// port) and stopped gracefully. Ready means the replica's /readyz answers
// 200 (in a group session with its tasks restored); its /metrics are read
// as Prometheus text.
package replicas
