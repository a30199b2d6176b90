// Package benchmarks is the harness behind `onceflow bench`: it measures one
// workload in exactly-once (EOS) and at-least-once (ALOS) mode, and the peers
// when asked, on the same broker in the same run.
//
// # What a run is
//
// Every run of every variant gets fresh topics (6 partitions by default) and
// its own consumer group, and reads the same input: a Workload's Input is
// deterministic, written anew for each run. Each repeat runs every variant
// once, and the order rotates (schedule): repeat i starts at variant i mod
// n, so no variant always runs first after the warm-up or always after the
// same neighbour. Reported figures are medians over repeats with their
// spread (min–max), and ratios are between medians of the same run of the
// bench.
//
// Throughput runs write the whole input first and then start the variant's
// replicas. The clock starts at the first committed offset the harness sees
// (it reads the group's committed offsets on the input every 20 ms) and stops
// at the commit before the one that reaches the input's end (that last
// transaction holds the remainder, committed only when the interval is up):
// records/s = records committed in between / time in between. Start-up (process start, group
// join, assignment, restore, the first fetch) is outside the window, and so
// is any input writer: the replicas have the machine to themselves. Writing
// first and starting the replicas before writing were both possible; writing
// first was chosen because a writer running beside the replicas takes CPU
// from them on a small machine, and timing from the first commit excludes
// start-up just as well. CPU seconds per million records are the process CPU
// time (getrusage for in-process replicas, /proc/<pid>/stat for Kafka Streams)
// spent in the same window, divided by the records it committed; with the
// broker's CPU (Config.BrokerPids, or the embedded broker inside the
// process) added, they are the primary figure, process + broker, which the
// tables give first and throughput beside. With Config.ColdRecords the
// window starts once that many records are committed, and the part before
// is reported apart as the run's cold figures (a fresh Kafka Streams JVM
// compiles its hot paths there). Config.Threads runs every variant at that
// many threads per replica: Kafka Streams' num.stream.threads, onceflow's
// processors in the process. Peak RSS is
// VmHWM, reset before the run (in-process) or the child's own (Kafka
// Streams). With the embedded broker the broker runs in this process: its CPU
// and memory are in the in-process figures.
//
// Latency runs start the variant on empty topics, wait until its group is
// stable with every replica a member and every partition assigned, then
// write the input at a steady rate (Config.Rate; by default half the
// median EOS throughput of the same point, the load at which the p99
// target, the commit interval plus P99OverInterval, is checked), stamping each
// record with the time it is handed to the writer. A read_committed
// reader of the output records, for each record, the time it was returned
// minus that timestamp (outputs keep their input's timestamp): the
// end-to-end latency, p50, p99, p99.9 and max.
//
// Commit latency and records per transaction come from onceflow's
// onceflow_commit_latency_seconds and onceflow_records_per_transaction
// histograms (a registry per run; quantiles interpolated within buckets),
// and from the Go peers' own timing of each commit (exact). Kafka Streams
// reports neither.
//
// After every run the output is read to its end read_committed and the
// workload checks it: exactly the expected count under exactly-once, at
// least it otherwise.
//
// # Adding a workload
//
// Implement Workload (its input, its onceflow topology, its peer variants,
// its check) and add it to the workloads map.
package benchmarks
