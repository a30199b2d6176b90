// Package kafka is the engine's narrow seam to Kafka: a consumer group that
// yields record batches per partition, and a producer with begin, send, add
// offsets, commit and abort. It is implemented on IBM/sarama; no sarama type
// crosses it, so the engine's core never depends on the client.
//
// The sarama configuration is built here and only here, with what the
// exactly-once guarantee needs forced on: protocol version 4.0 (negotiated
// down), idempotence, acks=all, read_committed, RequireStable offset
// fetches, static membership, eager assignment of whole tasks (the task
// assignor, see NewTaskGroup and TaskAssignorName), and timeouts that
// agree with each other (see Timeouts).
package kafka
