package engine

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
)

// rateWindow is how far back the transaction rate of Status looks.
const rateWindow = time.Minute

// Status is a snapshot of what a replica is doing, for its status page.
type Status struct {
	AppID, InstanceID string
	// InSession: the replica is in a group session; Generation and
	// MemberID are those of the session (or of the last one).
	InSession  bool
	Generation int32
	MemberID   string
	Ready      bool
	// Restoring: the session's tasks are being restored; RestoreIdle is
	// the time since the restore started or last restored a record.
	Restoring   bool
	RestoreIdle time.Duration
	Tasks       []TaskStatus
	Stats       Stats
	// TxnRate is the transactions committed per second over the last
	// minute (0 until two samples exist).
	TxnRate float64
	// LastCommit is the time the last transaction took to commit (0:
	// none yet); TransactionTimeout the bound it must stay well below.
	LastCommit         time.Duration
	TransactionTimeout time.Duration
	// Rejections counts rejected records by reason.
	Rejections map[string]int64
	// AbortsSinceCommit is the transactions aborted since the last commit.
	AbortsSinceCommit int
	StallTimeout      time.Duration
	// State is the measured size of each store of each task kept locally;
	// StateDisk is what the state's directory occupies on disk (allocated
	// blocks, as du reports them), StateMemTable what its memtables
	// allocated.
	State                    []StoreSize
	StateDisk, StateMemTable int64
	// TxnRecords and TxnInterval are the transaction size in force: the
	// configured commit records and interval, or less while commits near
	// their deadline (TxnShrunk).
	TxnRecords  int64
	TxnInterval time.Duration
	TxnShrunk   bool
}

// TaskStatus is one owned input partition.
type TaskStatus struct {
	Task      string // "<sub-topology>_<partition>"
	Topic     string
	Partition int32
	// Lag is the records not processed yet, as of the last fetch (-1:
	// nothing fetched yet).
	Lag       int64
	RecordsIn int64
	// Pending is how long input has been pending without a commit (0:
	// none); Stalled when longer than the stall timeout.
	Pending time.Duration
	Stalled bool
}

// live is what Status reads beyond the metrics: the session and the last
// commit. Written at session start and end and once per commit, never per
// record.
type live struct {
	mu struct {
		sync.Mutex
		inSession  bool
		generation int32
		member     string
		sess       kafka.Session // the session in progress: its generation changes in place
		claims     map[string][]int32
		lastCommit time.Duration
		samples    []rateSample
	}
}

type rateSample struct {
	at        time.Time
	committed int64
}

// session notes the start (md and claims) or, with claims nil, the end of
// a group session.
func (l *live) session(md kafka.GroupMetadata, claims map[string][]int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.inSession = claims != nil
	l.mu.generation, l.mu.member = md.GenerationID, md.MemberID
	l.mu.claims = claims
}

// bind notes the session in progress (nil: none), whose generation and
// member id Status reads as they are now.
func (l *live) bind(s kafka.Session) {
	l.mu.Lock()
	l.mu.sess = s
	l.mu.Unlock()
}

// committed notes how long the last commit took.
func (l *live) committed(took time.Duration) {
	l.mu.Lock()
	l.mu.lastCommit = took
	l.mu.Unlock()
}

// sample records the committed-transaction counter at now, keeping a
// rate window of samples.
func (l *live) sample(now time.Time, committed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.samples = append(l.mu.samples, rateSample{now, committed})
	i := 0
	for i < len(l.mu.samples)-2 && now.Sub(l.mu.samples[i].at) > rateWindow {
		i++
	}
	l.mu.samples = slices.Delete(l.mu.samples, 0, i)
}

// rate is the committed transactions per second over the samples.
func (l *live) rate(now time.Time, committed int64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.mu.samples) == 0 {
		return 0
	}
	first := l.mu.samples[0]
	dt := now.Sub(first.at).Seconds()
	if dt < 1 {
		return 0
	}
	return float64(committed-first.committed) / dt
}

// Status returns a snapshot of the replica's session, tasks and counters.
// It reads the metrics and a few fields noted per session and per commit;
// it never touches the record path.
func (e *Engine) Status() Status {
	now := e.commits.progress.now()
	st := Status{AppID: e.cfg.AppID, InstanceID: e.cfg.InstanceID, Ready: e.Ready(), Stats: e.m.snapshot(),
		TransactionTimeout: e.cfg.Timeouts.Transaction, StallTimeout: e.stallTimeout()}
	st.TxnRate = e.commits.live.rate(now, st.Stats.Committed)
	e.commits.live.mu.Lock()
	st.InSession, st.Generation, st.MemberID = e.commits.live.mu.inSession, e.commits.live.mu.generation, e.commits.live.mu.member
	if s := e.commits.live.mu.sess; s != nil && st.InSession {
		md := s.Metadata()
		st.Generation, st.MemberID = md.GenerationID, md.MemberID
	}
	st.LastCommit = e.commits.live.mu.lastCommit
	claims := maps.Clone(e.commits.live.mu.claims)
	e.commits.live.mu.Unlock()
	st.Restoring, _ = e.commits.progress.restoreState()
	if st.Restoring {
		_, since := e.commits.progress.restoreState()
		st.RestoreIdle = now.Sub(since)
	}
	st.Rejections = e.m.rejected.values()
	st.State = e.storeSizes()
	u := e.restorer.sizes.usage()
	st.StateDisk, st.StateMemTable = int64(u.Disk), int64(u.MemTable)
	st.TxnRecords = int64(e.m.txnRecordsLimit.value())
	st.TxnInterval = time.Duration(e.m.txnInterval.value() * float64(time.Second)).Round(time.Microsecond)
	st.TxnShrunk = st.TxnRecords < int64(e.cfg.CommitRecords) || st.TxnInterval < e.cfg.CommitInterval
	st.Tasks, st.AbortsSinceCommit = e.taskStatuses(now, claims)
	return st
}

// taskStatuses lists the claimed input partitions, sorted by topic and
// partition.
func (e *Engine) taskStatuses(now time.Time, claims map[string][]int32) ([]TaskStatus, int) {
	lags := e.m.consumerLag.values()
	in := e.m.recordsIn.values()
	pending, aborts := e.commits.progress.pendingSince()
	bound := e.stallTimeout()
	var out []TaskStatus
	for _, topic := range slices.Sorted(maps.Keys(claims)) {
		for _, p := range slices.Sorted(slices.Values(claims[topic])) {
			t := TaskStatus{Task: taskName(e.g.SubTopologyOf(topic), p), Topic: topic, Partition: p, Lag: -1}
			if lag, ok := lags[topicPartition{topic, p}]; ok {
				t.Lag = lag
			}
			t.RecordsIn = in[t.Task]
			if since, ok := pending[topicPartition{topic, p}]; ok {
				t.Pending = now.Sub(since)
				t.Stalled = t.Pending > bound
			}
			out = append(out, t)
		}
	}
	return out, aborts
}

// pendingSince copies, per partition with uncommitted input, since when.
func (p *progress) pendingSince() (map[topicPartition]time.Time, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.mu.pending), p.mu.aborts
}

// slowCommitShare is the share of the transaction timeout above which a
// commit counts as slow: the broker aborts a transaction open longer than
// the timeout, so a commit this slow leaves little headroom.
const slowCommitShare = 0.5

// checkCommitLatency warns and counts when a commit took more than
// slowCommitShare of the transaction timeout.
func (e *Engine) checkCommitLatency(took time.Duration) {
	limit := e.cfg.Timeouts.Transaction
	if limit <= 0 || float64(took) <= slowCommitShare*float64(limit) {
		return
	}
	e.m.slowCommits.Inc()
	e.log.Warn("slow commit: near the transaction timeout", "took", took.Round(time.Millisecond), "transaction_timeout", limit,
		"headroom", (limit - took).Round(time.Millisecond))
}
