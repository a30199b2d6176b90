package processor

import "github.com/onceflow/onceflow/internal/engine"

// Stats is a snapshot of a replica's counters since it started. Records
// are counted when the transaction that carries them commits, so a record
// processed again after an abort is counted once.
type Stats struct {
	// RecordsIn is the input records processed.
	RecordsIn int64
	// RecordsOut is the records written to output topics.
	RecordsOut int64
	// Rejected is the records written to the rejected-records topic.
	Rejected int64
	// Committed is the transactions (at-least-once: offset commits) that
	// succeeded; Aborted those aborted, each followed by a rewind.
	Committed, Aborted int64
	// ProducerRecreations is the producers closed and created again
	// (fenced, timed out, or a commit whose outcome was unknown).
	ProducerRecreations int64
	// Sessions is the group sessions (generations) the replica took part in.
	Sessions int64
	// Restored is the changelog records replayed into local state.
	Restored int64
	// RestoreWaits is the restores that waited for a transaction open on
	// their changelog partition to end.
	RestoreWaits int64
	// Wipes is the task stores wiped before a restore (the changelog no
	// longer held their offset, or the state was older than the
	// changelog's tombstone retention); Dropped those deleted because the
	// replica had not owned the task for Config.StateCleanupDelay.
	Wipes, Dropped int64
	// Expired is the dedup entries expired by stream time.
	Expired int64
	// ChangelogRecords is the state changes sent to changelogs;
	// ChangesCollapsed those not sent because a later write of the same
	// key in the same batch replaced them.
	ChangelogRecords, ChangesCollapsed int64
	// Purges is the purges of repartition topics up to the committed
	// offsets (one per topic and purge).
	Purges int64
	// CommitTimeouts is the transaction steps that ran past
	// Config.CommitTimeout (each dropped the producer).
	CommitTimeouts int64
	// TransactionShrinks is the times transactions were made smaller
	// (half the records and interval) because a commit neared its
	// deadline; TransactionGrows the times they were made larger again
	// after healthy commits (see Status.TransactionRecordsLimit).
	TransactionShrinks, TransactionGrows int64
	// HangingTransactions is the checks that found the replica's
	// transactional id with a transaction open past the transaction
	// timeout plus 30 s; HangRecoveries the producers created again to
	// abort one (at most 3 in a row).
	HangingTransactions, HangRecoveries int64
}

func statsOf(s engine.Stats) Stats {
	return Stats{
		RecordsIn: s.RecordsIn, RecordsOut: s.RecordsOut, Rejected: s.Rejected,
		Committed: s.Committed, Aborted: s.Aborted, ProducerRecreations: s.ProducerRecreations,
		Sessions: s.Sessions, Restored: s.Restored, RestoreWaits: s.RestoreWaits,
		Wipes: s.Wipes, Dropped: s.Dropped, Expired: s.Expired,
		ChangelogRecords: s.ChangelogRecords, ChangesCollapsed: s.ChangesCollapsed,
		Purges: s.Purges, CommitTimeouts: s.CommitTimeouts,
		TransactionShrinks: s.TransactionShrinks, TransactionGrows: s.TransactionGrows,
		HangingTransactions: s.HangingTransactions, HangRecoveries: s.HangRecoveries,
	}
}
