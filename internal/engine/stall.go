package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultStallTimeout is how long an assigned partition may have input
// pending without a commit, or a restore go without restoring a record,
// before the replica reports a stall (Config.StallTimeout).
const DefaultStallTimeout = 2 * time.Minute

// restoreLogInterval is how often a restore in progress is logged.
const restoreLogInterval = 10 * time.Second

// ErrStalled is wrapped by Health's error: the replica has made no progress
// for longer than its stall timeout. It clears by itself once the replica
// commits again.
var ErrStalled = errors.New("engine: stalled")

func (tp topicPartition) String() string { return fmt.Sprintf("%s/%d", tp.topic, tp.partition) }

// progress tracks what a stall is measured against: per assigned input
// partition, since when it has had input received and not committed
// (aborts and rewinds do not clear it, only a commit of that partition
// does), and whether a restore is moving. Written by the session's
// goroutines, read by the watchdog and the health check.
type progress struct {
	now func() time.Time
	mu  struct {
		sync.Mutex
		pending        map[topicPartition]time.Time
		aborts         int // since the last commit
		restoring      bool
		restoreSince   time.Time // start of the restore, or its last restored record
		restoredRecent int64     // restored records counted at restoreSince
	}
}

func newProgress(now func() time.Time) *progress {
	if now == nil {
		now = time.Now
	}
	p := &progress{now: now}
	p.mu.pending = map[topicPartition]time.Time{}
	return p
}

// assign forgets partitions the replica no longer owns.
func (p *progress) assign(claims map[string][]int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for tp := range p.mu.pending {
		if !slices.Contains(claims[tp.topic], tp.partition) {
			delete(p.mu.pending, tp)
		}
	}
}

// received notes input of a partition that is not committed yet.
func (p *progress) received(topic string, partition int32) {
	tp := topicPartition{topic, partition}
	p.mu.Lock()
	if _, ok := p.mu.pending[tp]; !ok {
		p.mu.pending[tp] = p.now()
	}
	p.mu.Unlock()
}

// committed clears the partitions whose offsets a commit carried.
func (p *progress) committed(offsets map[string]map[int32]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for topic, parts := range offsets {
		for part := range parts {
			delete(p.mu.pending, topicPartition{topic, part})
		}
	}
	p.mu.aborts = 0
}

// aborted counts a failed transaction.
func (p *progress) aborted() {
	p.mu.Lock()
	p.mu.aborts++
	p.mu.Unlock()
}

// restoring marks the start (on) or end (off) of a session's restore.
func (p *progress) restoring(on bool, restored int64) {
	p.mu.Lock()
	p.mu.restoring = on
	p.mu.restoreSince = p.now()
	p.mu.restoredRecent = restored
	p.mu.Unlock()
}

// stall is one partition (or the restore) without progress.
type stall struct {
	what  string // "input/3", or "restore"
	since time.Time
}

// stalls lists what has made no progress for longer than bound, oldest
// first. restored is the replica's restored-record counter: a restore that
// moves is not stalled.
func (p *progress) stalls(bound time.Duration, restored int64) (out []stall, aborts int) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.restoring && restored != p.mu.restoredRecent {
		p.mu.restoredRecent = restored
		p.mu.restoreSince = now
	}
	if p.mu.restoring && now.Sub(p.mu.restoreSince) > bound {
		out = append(out, stall{what: "restore", since: p.mu.restoreSince})
	}
	for _, tp := range slices.SortedFunc(maps.Keys(p.mu.pending), func(a, b topicPartition) int {
		return strings.Compare(a.String(), b.String())
	}) {
		if since := p.mu.pending[tp]; now.Sub(since) > bound {
			out = append(out, stall{what: tp.String(), since: since})
		}
	}
	slices.SortStableFunc(out, func(a, b stall) int { return a.since.Compare(b.since) })
	return out, p.mu.aborts
}

// oldestPending is the age of the oldest uncommitted input (0: none).
func (p *progress) oldestPending() time.Duration {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var oldest time.Duration
	for _, since := range p.mu.pending {
		oldest = max(oldest, now.Sub(since))
	}
	return oldest
}

// restoreState reports whether a restore runs and since when it has not
// moved.
func (p *progress) restoreState() (bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.restoring, p.mu.restoreSince
}

// stallTimeout is the configured bound, or its default.
func (e *Engine) stallTimeout() time.Duration {
	if e.cfg.StallTimeout > 0 {
		return e.cfg.StallTimeout
	}
	return DefaultStallTimeout
}

// Health returns nil while the replica makes progress, or an error
// wrapping ErrStalled that names each partition with input pending and no
// commit for longer than the stall timeout (a hung commit, a loop of aborts
// and rewinds), or a restore that has not moved for as long.
func (e *Engine) Health() error {
	stalls, aborts := e.commits.progress.stalls(e.stallTimeout(), e.m.restored.value())
	if len(stalls) == 0 {
		return nil
	}
	now := e.commits.progress.now()
	var b strings.Builder
	for i, s := range stalls {
		if i > 0 {
			b.WriteString(", ")
		}
		if s.what == "restore" {
			fmt.Fprintf(&b, "restore made no progress for %v", now.Sub(s.since).Round(time.Second))
		} else {
			fmt.Fprintf(&b, "partition %s has had input pending without a commit for %v", s.what, now.Sub(s.since).Round(time.Second))
		}
	}
	return fmt.Errorf("%w: %s (%d transactions aborted since the last commit; bound %v)", ErrStalled, b.String(), aborts, e.stallTimeout())
}

// watch reports stalls until ctx ends: a warning per stalled partition
// when it stalls and again every stall timeout while it stays stalled, the
// stall gauges, a line every restoreLogInterval while a restore runs, and
// the state's size every stateSizeInterval.
func (e *Engine) watch(ctx context.Context, tick <-chan time.Time) {
	bound := e.stallTimeout()
	reported := map[string]time.Time{}
	lastRestoreLog := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		now := e.commits.progress.now()
		e.commits.live.sample(now, e.m.committed.value())
		stalls, aborts := e.commits.progress.stalls(bound, e.m.restored.value())
		e.m.stalled.Set(float64(len(stalls)))
		e.m.oldestPending.Set(e.commits.progress.oldestPending().Seconds())
		next := map[string]time.Time{} // stalled partition → last reported
		for _, s := range stalls {
			if last, ok := reported[s.what]; ok && now.Sub(last) < bound {
				next[s.what] = last
				continue
			}
			next[s.what] = now
			e.logStall(e.log, s, now, aborts, bound)
		}
		for what := range reported {
			if _, ok := next[what]; !ok {
				e.log.Info("progress again", "partition", what)
			}
		}
		reported = next
		if e.restorer.db != nil && e.restorer.sizes.due(now) {
			e.restorer.measureState()
		}
		if on, since := e.commits.progress.restoreState(); on && now.Sub(lastRestoreLog) >= restoreLogInterval {
			lastRestoreLog = now
			e.log.Named("restore").Info("restore in progress", "restored_records", e.m.restored.value(), "since_last_record", now.Sub(since).Round(time.Millisecond))
		}
	}
}

func (e *Engine) logStall(log hclog.Logger, s stall, now time.Time, aborts int, bound time.Duration) {
	if s.what == "restore" {
		log.Warn("stalled: restore made no progress", "for", now.Sub(s.since).Round(time.Second), "bound", bound)
		return
	}
	log.Warn("stalled: input pending without a commit", "partition", s.what, "for", now.Sub(s.since).Round(time.Second),
		"aborts_since_commit", aborts, "bound", bound)
}
