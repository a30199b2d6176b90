// Package processor runs a topology as one replica of a consumer group.
//
// In exactly-once mode (the default) each replica owns one transactional
// producer (transactional.id "<ApplicationID>-<InstanceID>"). Every commit
// interval (or every CommitRecords records) the outputs, the rejected
// records and the consumed offsets commit in one Kafka transaction, with
// the group metadata of the live session (KIP-447), so a replica whose
// generation is stale cannot commit. A failed transaction is aborted and
// the session ended, so consumption resumes from the committed offsets:
// nothing is skipped and nothing is doubled in a read_committed reader.
//
// In at-least-once mode the same topology runs with an idempotent producer
// and the offsets are committed only after every output of the interval is
// acknowledged: nothing is lost, records may repeat after a failure.
//
// Metrics (with a Registerer; every series has the labels app and instance):
//
//	onceflow_records_in_total{task}          records consumed and processed
//	onceflow_records_out_total{topic}        records sent to outputs
//	onceflow_rejected_records_total{reason}  records sent to <app>-rejected
//	onceflow_transactions_total{outcome}     committed, aborted
//	onceflow_commit_latency_seconds          add offsets + commit
//	onceflow_records_per_transaction         consumed records per commit
//	onceflow_producer_recreations_total      producers recreated (fenced, unknown outcome)
//	onceflow_commit_failures_total{class}    failed steps by class
//	onceflow_rebalances_total                sessions joined
//	onceflow_rebalance_duration_seconds      time between sessions
//	onceflow_assigned_partitions             input partitions owned
//	onceflow_restored_records_total          changelog records replayed into state
//	onceflow_restore_duration_seconds        time to restore one store of one task
//	onceflow_state_changes_total{outcome}    state writes sent to changelogs, or collapsed
//	onceflow_commit_timeouts_total           commit steps past Config.CommitTimeout (producer dropped)
//	onceflow_stalled_partitions              partitions with input pending and no commit past Config.StallTimeout
//	onceflow_oldest_pending_seconds          age of the oldest input received and not committed
//	onceflow_clock_skewed_records_total      records stamped beyond the wall clock + MaxClockSkew
//	onceflow_state_wipes_total               task stores wiped before a restore (offset gone, or state too old)
//	onceflow_state_dropped_total             task stores deleted after StateCleanupDelay without owning the task
//	onceflow_dedup_expired_total             dedup entries expired by stream time
//	onceflow_repartition_purges_total        repartition topics purged up to committed offsets
//	onceflow_restore_waits_total             restores that waited for an open changelog transaction
//	onceflow_consumer_lag{topic,partition}   offsets of an owned input partition not yet processed (an input written in transactions keeps 1 per commit marker after its last record; `onceflow lag` counts records)
//	onceflow_transaction_timeout_seconds     the transaction timeout (for headroom alerts)
//	onceflow_slow_commits_total              commits that took over half the transaction timeout
//	onceflow_transaction_records_limit       records after which a transaction commits, in force (CommitRecords, or less)
//	onceflow_transaction_interval_seconds    the commit interval in force (CommitInterval, or less)
//	onceflow_transaction_shrinks_total       transactions halved: a commit neared its deadline
//	onceflow_transaction_grows_total         transactions doubled back after healthy commits
//	onceflow_hanging_transactions_total      checks that found the transactional id's transaction open past its timeout + 30 s
//	onceflow_hanging_transaction_recoveries_total  producers created again to abort a hanging transaction
//	onceflow_state_bytes{store,task}         bytes of a store of a task in the local state (every 30 s)
//	onceflow_state_disk_bytes                bytes the state directory occupies on disk, as du reports them
//	onceflow_state_memtable_bytes            bytes the state's memtables allocated
//	onceflow_build_info{version,revision,go_version}  always 1
//
// With external sinks, the sink runner's, each series at zero for every
// sink of the topology:
//
//	onceflow_sink_deliveries_total{sink,outcome}  settled: succeeded, dead-lettered, unknown, skipped
//	onceflow_sink_retries_total{sink}        attempts that failed and were retried
//	onceflow_sink_backlog{sink}              deliveries read and not settled yet
//	onceflow_sink_dead_letters_total{sink}   deliveries written to the dead-letter topic
//	onceflow_sink_unknown{sink}              deliveries parked with an unknown outcome
//	onceflow_sink_delivery_seconds{sink}     time of one attempt
//	onceflow_sink_ledger_stale_entries_total{sink}  ledger entries a restore skipped (a zombie's)
//	onceflow_sink_outbox_purges_total        outbox purges up to the committed offsets
//
// Counters with a label exist at zero for their known labels (outcomes,
// failure classes, rejection reasons, the tasks a session owns, the output
// topics, each store of each owned task) before the first event; the lag
// of a partition appears with its first fetch. A test checks this list
// against what a running replica serves. Stats reads the same
// counters, so a snapshot and /metrics always agree.
//
// Deadlines: every step that ends a transaction is bounded by
// Config.CommitTimeout (a coordinator that does not answer costs one
// producer, not the replica), Run returns within StopBound of its context
// ending, and a replica that makes no progress on a partition with pending
// input for Config.StallTimeout says so in its log, its metrics and
// /healthz (503 with the reason).
//
// Status page: Handler serves on / an HTML page that refreshes itself
// every few seconds (no scripts, no front-end build): the replica's group
// session, its tasks with partition, lag and state (restoring, running,
// stalled), transactions with their rate and the last commit latency's
// headroom to the transaction timeout, rejections by reason, and the
// sinks' delivery counts. It renders Status, which a program can read
// directly; WriteStatusPage renders any snapshot.
package processor
