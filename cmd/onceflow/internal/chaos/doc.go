// Package chaos runs the orders topology under faults and checks that
// nothing was lost or doubled. It starts three `onceflow run orders`
// replica processes (each with its own Pebble state and metrics port)
// against a broker list, a cluster of scripts/kafka.sh, or the embedded
// broker, and writes order events at a steady rate with duplicates,
// conflicts and out-of-order versions (keeping the truth). For a set
// duration, at seeded random intervals, it injects one fault at a time,
// the kinds dealt like a shuffled deck:
//
//   - replica-kill: SIGKILL a replica, start it again on its own state;
//   - replica-pause: SIGSTOP a replica past the group's session timeout,
//     then SIGCONT it: a zombie the group and the transaction coordinator
//     must fence;
//   - broker-kill (cluster only): kill -9 a broker (of every three, one
//     the transaction coordinator of a replica's transactional id, one
//     the group's coordinator, both found with the admin client, one any)
//     and start it again on its data;
//   - network: between one replica and one broker (each replica reaches
//     each broker through a proxy of its own, package testproxy, named to
//     it with run's hidden --dial-via flag), for a bounded time: latency,
//     a hang (delivered late once healed) or resets;
//   - request-fault (embedded only): the broker answers a replica's
//     Produce, EndTxn or TxnOffsetCommit requests with errors, or late
//     (kfake's control hooks);
//   - operator-command (allstages only): resolve the deliveries parked as
//     unknown and redrive the dead letters, then SIGKILL a replica.
//
// With Topology allstages (allstages.go) the replicas run
// examples/allstages instead, every kind of stage, with their sink runners
// delivering to a receiver in this process that is not idempotent
// (package receiver): a key applied twice is a violation. The input is
// planned by package gen with its truth; closing records end every window
// once the input is consumed; the run then settles what is parked as an
// operator would and checks outputs, windows, rejections, ticks and every
// effect with verify.CheckAllStages.
//
// At the end it waits (bounded) until all input is committed, reads the
// topics read_committed and checks them against the truth with package
// verify: every input accounted for once by lineage, rejections by reason,
// totals. The Result reports the faults, the counts and the longest time a
// partition had input and made no committed progress.
package chaos
