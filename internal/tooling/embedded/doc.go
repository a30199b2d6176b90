// Package embedded runs a Kafka-compatible broker inside the process: one
// kfake broker (github.com/twmb/franz-go/pkg/kfake) configured for
// onceflow's transactional workloads. `onceflow broker`, `onceflow demo` and
// the fast tests use it.
//
// kfake implements produce, fetch, consumer groups, transactions with
// KIP-447 fencing, read_committed fetches and persistence. It differs from
// Apache Kafka in ways tests must keep in mind: it never answers
// CONCURRENT_TRANSACTIONS, it completes EndTxn synchronously (no
// PREPARE/COMPLETE states), and it creates every partition on its single
// broker. Paths that depend on those differences need the real-Kafka suite.
//
// With a data dir, state survives a clean stop only. kfake's recovery after
// a crash aborts a transaction that was open in memory without writing its
// abort marker and reloads producer state from the last clean stop, so a
// later restart can show aborted records and hide committed ones. Start
// therefore refuses a data dir that has no clean-stop record
// (ErrUncleanStop) unless told to wipe it, and locks the dir while running.
//
// Broker.Cluster exposes the underlying *kfake.Cluster so tests can inject
// faults (Cluster.Fault, ControlKey) and inspect groups.
package embedded
