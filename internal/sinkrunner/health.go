package sinkrunner

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStalled is what Health returns while the runner makes no progress.
var ErrStalled = errors.New("sinkrunner: stalled")

// DefaultStallTimeout is the stall timeout when Config.StallTimeout is
// zero (the engine's default).
const DefaultStallTimeout = 2 * time.Minute

// progress tracks what Ready and Health report: whether the runner is in
// a group session with its ledgers restored, and when it last made
// progress (a delivery settled, an attempt failed, a session began or
// ended, a partition that held nothing got a delivery).
type progress struct {
	ready atomic.Bool
	cur   atomic.Pointer[session] // the session delivering, nil between sessions
	mu    struct {
		sync.Mutex
		last time.Time
	}
}

// touch records progress at t.
func (pr *progress) touch(t time.Time) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.mu.last = t
}

func (pr *progress) since() time.Time {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.mu.last
}

// Ready reports whether the runner is in a group session with the ledgers
// of every partition it owns restored, delivering.
func (r *Runner) Ready() bool { return r.progress.ready.Load() }

// stallBound is how long the runner may go without progress before
// Health reports a stall: the stall timeout, and never less than one
// attempt and the longest backoff (a delivery waiting to retry is not a
// stall).
func (r *Runner) stallBound() time.Duration {
	return max(r.cfg.StallTimeout, r.cfg.Sinks.AttemptTimeout+r.cfg.Sinks.BackoffCap)
}

// Health returns nil while the runner makes progress. It returns
// ErrStalled when, for longer than the stall bound, it has held
// deliveries without settling any or seeing an attempt fail, or has not
// been in a group session (joining fails, or restoring a ledger hangs).
func (r *Runner) Health() error {
	if len(r.topics) == 0 {
		return nil
	}
	bound := r.stallBound()
	idle := r.cfg.Now().Sub(r.progress.since())
	if idle <= bound {
		return nil
	}
	ss := r.progress.cur.Load()
	if ss == nil || !r.progress.ready.Load() {
		return fmt.Errorf("%w: not delivering (no group session, or ledgers restoring) for %v (bound %v)", ErrStalled, idle.Round(time.Second), bound)
	}
	if n := ss.unsettled(); n > 0 {
		return fmt.Errorf("%w: %d deliveries held and none settled or attempted for %v (bound %v)", ErrStalled, n, idle.Round(time.Second), bound)
	}
	return nil
}

// unsettled counts the deliveries the session holds.
func (ss *session) unsettled() int {
	n := 0
	for _, ps := range ss.parts {
		for _, p := range ps {
			n += p.unsettled()
		}
	}
	return n
}
