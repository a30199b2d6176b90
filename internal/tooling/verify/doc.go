// Package verify checks onceflow's output from the outside: it reads topics
// read_committed to their ends with an independent client (franz-go, not the
// engine's sarama) and matches output records to input records by lineage.
//
// # Reading to the end
//
// ReadAll first asks for each partition's log start and its last stable
// offset (a read_committed ListOffsets), then consumes every partition from
// its start until its position reaches that end. Transactions leave control
// records (commit and abort markers) in the log, often as the last record of
// a partition, so control records advance the position but are never
// returned as data; records of aborted transactions are never returned.
// The read is bounded by the context. A partition whose end falls just
// after an aborted transaction's records while another transaction is still
// open there reaches its end when that open transaction finishes (commits,
// aborts, or times out); a quiescent topic always reads to its end at once.
//
// # Lineage
//
// Every record the engine writes carries the header onceflow-source with the
// input record it came from, as topic/partition/offset (events/3/1207).
// Lineage reads both topics and reports how many inputs have no output
// (missing), how many extra copies exist (duplicates: an input with three
// outputs counts two), and how many outputs cannot be traced to an input of
// the input topic with the same value (unexpected). Match is the pure part.
//
// # The allstages topology
//
// CheckAllStages compares what examples/allstages wrote, and the effects
// its sinks had at a receiver, with the truth of package gen (see
// allstages.go).
package verify
