// Package topology is the graph a user builds in Go: typed sources with
// codecs, the stages records flow through, and topic outputs.
//
//   - Stateless stages: Map, MapValues, Filter, FlatMap, Merge, and Process,
//     a function that forwards any number of records and reads the
//     consumed record's coordinates and headers.
//   - Gates, which reject records visibly: Dedup (an event id seen before,
//     reason duplicate or conflict) and LatestVersion (an update not newer
//     than the last one accepted per entity, reason stale).
//   - Aggregates by key: Reduce, Count and Sum, and after grouping
//     (GroupByKey, or GroupBy with a new key) Grouped.Count,
//     Grouped.Reduce and Aggregate. Grouping goes through an internal
//     topic "<application id>-<name>-repartition" when the key may have
//     changed, so a grouped aggregate is always correct.
//   - State of one's own: Store declares a key-value store, passed to the
//     Process functions that read and write it.
//   - Time: a grouped stream's WindowedBy cuts it into TumblingWindows,
//     HoppingWindows, SlidingWindows or SessionWindows, with a grace
//     period; Count, Reduce and WindowedAggregate then aggregate per key
//     and window, emitting every update or, with EmitFinal, each window's
//     result once when it closes. Records later than their windows' end
//     plus grace are rejected with reason "late". WithTimestamp takes the
//     event time from the value. Outputs are keyed by Windowed[K], encoded
//     by WindowedCodec.
//   - Timers: Punctuate runs a function of a Process stage every interval
//     of stream time or wall-clock time, per task, inside the transaction.
//   - Topics between parts of the graph: Repartition (an internal topic,
//     to bring the records of one key, or of one event id, together) and
//     Through (a topic of the user's, written and read back).
//   - Outputs: To.
//
// Stateful stages (Dedup, LatestVersion, Reduce, Count, Sum, the grouped
// and windowed aggregates) and stores (Store) take a name from the user. It names the store and its changelog
// topic, "<application id>-<name>-changelog": keep it across releases,
// since state is bound to it, not to the stage's place in the graph.
//
// Building never panics. Mistakes (a missing codec, a nil function, a topic
// read twice, a stateful stage without a name, an aggregate after a
// key-changing stage without a Repartition between them) accumulate and
// come back together from Validate, Describe or the runtime's constructor.
//
// Stages that change types are package-level functions, since Go methods
// cannot take type parameters:
//
//	t := topology.New("orders")
//	in := topology.Source(t, "orders", serde.String(), serde.JSON[Order]())
//	big := topology.Filter(in, func(k string, o Order) bool { return o.Amount > 100 })
//	topology.To(big, "big-orders", serde.String(), serde.JSON[Order]())
//
// The unit of rejection is one record as it flows: a gate that rejects one
// of the records a FlatMap or Process produced rejects that one only, and
// what its own path wrote to state is rolled back with it. An error that
// is not a gate's rejection (a failed decode, a Process or Map error)
// rejects the whole input record: none of its outputs or state changes are
// kept.
//
// Every output record carries the header onceflow-source naming the input
// record (topic/partition/offset) it came from. The runtime adds it.
//
// Records of one sub-topology (a connected part of the graph) are processed
// per partition, as tasks: its source topics must have the same partition
// count, and state is kept per task.
//
// The processor package runs a topology against Kafka; topologytest runs
// it in-process, without a broker, for unit tests.
package topology
