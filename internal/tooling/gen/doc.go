// Package gen generates input records for onceflow: `onceflow produce`, the
// demo and tests use it to fill a topic with records whose identity,
// lineage and ordering a checker can rely on.
//
// Every record of a run has:
//
//   - key "key-<n mod Keys>", so records spread over the partitions by the
//     key hash and each key recurs every Keys records;
//   - a value that is unique across runs: a small JSON object with the run
//     id and the sequence number, padded to ValueSize;
//   - header "event-id" = "<run id>-<sequence>", unique per record;
//   - header "version" = the decimal count of this key's records so far in
//     the run (1, 2, 3, ...), increasing per key. Versions start at 1 in
//     every run, so a second run on the same topic looks stale to a version
//     gate that saw the first.
//
// Produce writes with franz-go's idempotent producer (acks=all), batched,
// independent of the engine's client.
//
// The examples have generators of their own, each with its truth: orders
// (PlanOrders, ProduceOrders), pageviews, and allstages (PlanAllStages,
// ProduceAllStages, SimulateAllStages: every output, window, rejection and
// sink effect of examples/allstages).
package gen
