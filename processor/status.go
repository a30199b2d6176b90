package processor

import (
	"maps"
	"time"

	"github.com/onceflow/onceflow/internal/sinkrunner"
)

// Status is a snapshot of what a replica is doing: its group session, its
// tasks and its counters. The status page on / renders it.
type Status struct {
	// Taken is when the snapshot was taken.
	Taken                     time.Time
	ApplicationID, InstanceID string
	// OnlySinks: the replica runs the sink runner alone (Config.OnlySinks);
	// the processing fields are empty.
	OnlySinks bool
	// InSession: the replica is in a group session. Generation and
	// MemberID are those of the session, or of the last one.
	InSession  bool
	Generation int32
	MemberID   string
	// Ready and Health are what /readyz and /healthz answer (Health ""
	// while healthy).
	Ready  bool
	Health string
	// Restoring: the session's tasks are being restored from their
	// changelogs; RestoreIdle is the time since the restore started or
	// last restored a record (Stats.Restored counts the records).
	Restoring   bool
	RestoreIdle time.Duration
	// Tasks are the input partitions the replica owns.
	Tasks []TaskStatus
	Stats Stats
	// TransactionRate is the transactions committed per second over the
	// last minute (0 until the replica has run for a while).
	TransactionRate float64
	// LastCommitLatency is the time the last transaction took to commit
	// (0: none yet); TransactionTimeout the broker aborts a transaction
	// after (see CommitHeadroom).
	LastCommitLatency  time.Duration
	TransactionTimeout time.Duration
	// TransactionRecordsLimit and TransactionInterval are the transaction
	// size in force: Config.CommitRecords and Config.CommitInterval, or
	// down to 1/16 of them while commits near their deadline (shrunk by
	// half on each such commit, grown back by twice after 20 healthy
	// commits in a row); TransactionShrunk while they are below the
	// configured values.
	TransactionRecordsLimit int64
	TransactionInterval     time.Duration
	TransactionShrunk       bool
	// AbortsSinceCommit is the transactions aborted since the last commit.
	AbortsSinceCommit int
	StallTimeout      time.Duration
	// Rejections counts the records sent to the rejected-records topic, by
	// reason.
	Rejections map[string]int64
	// Sinks are the delivery counts of the topology's external sinks.
	Sinks []SinkStatus
	// State is the local state's size per store and task, measured every
	// 30 s (exactly for a store under 8 MiB, else Pebble's estimate of its
	// files); StateDiskBytes is what the state directory occupies on disk
	// (allocated blocks, as du reports them) and StateMemTableBytes what
	// its memtables allocated.
	State                              []StoreStatus
	StateDiskBytes, StateMemTableBytes int64
}

// StoreStatus is the local size of one store of one task.
type StoreStatus struct {
	Store string
	// Task is "<sub-topology>_<partition>".
	Task  string
	Bytes int64
}

// CommitHeadroom is how far the last commit latency stays below the
// transaction timeout, as a fraction of it (1: instant, 0: at the timeout).
func (s Status) CommitHeadroom() float64 {
	if s.TransactionTimeout <= 0 {
		return 0
	}
	return 1 - float64(s.LastCommitLatency)/float64(s.TransactionTimeout)
}

// TaskState is what a task is doing.
type TaskState string

const (
	// TaskRestoring: the session's state is being restored.
	TaskRestoring TaskState = "restoring"
	// TaskRunning: processing, with any pending input committed within
	// the stall timeout.
	TaskRunning TaskState = "running"
	// TaskStalled: input pending without a commit for longer than the
	// stall timeout.
	TaskStalled TaskState = "stalled"
)

// TaskStatus is one owned input partition.
type TaskStatus struct {
	// Task is "<sub-topology>_<partition>".
	Task      string
	Topic     string
	Partition int32
	State     TaskState
	// Lag is the records of the partition not processed yet, as of the
	// last fetch; -1 before the first fetch.
	Lag int64
	// RecordsIn is the task's records processed (committed).
	RecordsIn int64
	// Pending is how long input has been pending without a commit (0:
	// none).
	Pending time.Duration
}

// SinkStatus is one external sink's delivery counts.
type SinkStatus struct {
	Sink string
	// Succeeded, DeadLettered, Unknown and Skipped count settled
	// deliveries by outcome (Skipped: settled before, seen again in a
	// replay).
	Succeeded, DeadLettered, Unknown, Skipped int64
	// Backlog is the deliveries read and not settled yet; Parked those
	// held with an unknown outcome in the ledgers this replica owns.
	Backlog, Parked int64
	// Retries is the attempts that failed and were retried.
	Retries int64
}

// Status returns a snapshot of the replica.
func (p *Processor) Status() Status {
	st := Status{Taken: time.Now(), ApplicationID: p.cfg.ApplicationID, InstanceID: p.cfg.InstanceID, OnlySinks: p.cfg.OnlySinks,
		Ready: p.Ready(), Sinks: sinkStatuses(p.run.Status())}
	if err := p.Health(); err != nil {
		st.Health = err.Error()
	}
	if p.cfg.OnlySinks {
		return st
	}
	es := p.e.Status()
	st.InSession, st.Generation, st.MemberID = es.InSession, es.Generation, es.MemberID
	st.Restoring, st.RestoreIdle = es.Restoring, es.RestoreIdle
	st.Stats = statsOf(es.Stats)
	st.TransactionRate = es.TxnRate
	st.LastCommitLatency, st.TransactionTimeout = es.LastCommit, es.TransactionTimeout
	st.AbortsSinceCommit, st.StallTimeout = es.AbortsSinceCommit, es.StallTimeout
	st.TransactionRecordsLimit, st.TransactionInterval, st.TransactionShrunk = es.TxnRecords, es.TxnInterval, es.TxnShrunk
	st.Rejections = maps.Clone(es.Rejections)
	for _, sz := range es.State {
		st.State = append(st.State, StoreStatus{Store: sz.Store, Task: sz.Task, Bytes: sz.Bytes})
	}
	st.StateDiskBytes, st.StateMemTableBytes = es.StateDisk, es.StateMemTable
	for _, t := range es.Tasks {
		state := TaskRunning
		switch {
		case es.Restoring:
			state = TaskRestoring
		case t.Stalled:
			state = TaskStalled
		}
		st.Tasks = append(st.Tasks, TaskStatus{Task: t.Task, Topic: t.Topic, Partition: t.Partition, State: state,
			Lag: t.Lag, RecordsIn: t.RecordsIn, Pending: t.Pending})
	}
	return st
}

func sinkStatuses(in []sinkrunner.SinkStatus) []SinkStatus {
	var out []SinkStatus
	for _, s := range in {
		out = append(out, SinkStatus{Sink: s.Sink,
			Succeeded: s.Outcomes[sinkrunner.OutcomeSucceeded], DeadLettered: s.Outcomes[sinkrunner.OutcomeDeadLettered],
			Unknown: s.Outcomes[sinkrunner.OutcomeUnknown], Skipped: s.Outcomes[sinkrunner.OutcomeSkipped],
			Backlog: s.Backlog, Parked: s.Unknown, Retries: s.Retries})
	}
	return out
}
