package engine

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// Local state is trusted only as far as the changelog still holds every
// record written since the replica last owned the task. Changelogs are
// compacted: a tombstone the task's next owner wrote is dropped once the
// topic's delete.retention.ms has passed, and a restore from an older
// offset would then keep the deleted key. So each (store, task) records
// when the replica last owned it (statestore.MarkRestored: as of the start
// of a session whose restore of it completed; statestore.MarkOwned: after
// its commits), or, while a restore from nothing is unfinished, when that
// restore began (statestore.MarkRestoring). A restore wipes state older
// than the retention allows, and state of tasks not owned for CleanupDelay
// is deleted, as Kafka Streams' state cleaner does.

// defaultDeleteRetention is Kafka's default delete.retention.ms, assumed
// when the broker does not report a changelog's.
const defaultDeleteRetention = 24 * time.Hour

// markEvery bounds how often commits refresh the last-owned times.
const markEvery = time.Second

// readDeleteRetention reads the tombstone retention of every changelog.
// One the broker does not tell is taken to be Kafka's default.
func (r *restorer) readDeleteRetention(admin *kafka.Admin) error {
	r.deleteRetention = map[string]time.Duration{}
	for _, s := range r.stores {
		v, ok, err := admin.TopicConfig(s.topic, "delete.retention.ms")
		if err != nil {
			r.log.Warn("cannot read the changelog's delete.retention.ms; assuming the default", "topic", s.topic, "default", defaultDeleteRetention, "error", err)
		}
		d := defaultDeleteRetention
		if ok {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("engine: changelog %q has delete.retention.ms=%q: %w", s.topic, v, err)
			}
			d = time.Duration(ms) * time.Millisecond
		}
		r.deleteRetention[s.topic] = d
	}
	return nil
}

// stale reports whether the local state of st may lack a tombstone that
// compaction has since dropped from the changelog: when it was last owned
// (or, for an unfinished restore from nothing, when that restore began)
// longer ago than the changelog's delete.retention.ms less the session
// timeout (the longest a replica can believe it owns a task it lost), or
// when neither time is recorded.
func (r *restorer) stale(s storeInfo, st statestore.StoreTask) (bool, string, error) {
	at, ok, err := r.db.LastOwned(st.Store, st.Task)
	what := "last owned"
	if err == nil && !ok {
		at, ok, err = r.db.RestoreBegan(st.Store, st.Task)
		what = "an unfinished restore from nothing began"
	}
	if err != nil {
		return false, "", fmt.Errorf("engine: restore %s: %w", st, err)
	}
	if !ok {
		return true, "no last-owned time recorded", nil
	}
	age := r.now().Sub(at)
	limit := r.deleteRetention[s.topic] - r.timeouts.Session
	if age >= limit {
		return true, fmt.Sprintf("%s %v ago, the changelog keeps tombstones %v", what, age.Round(time.Second), r.deleteRetention[s.topic]), nil
	}
	return false, "", nil
}

// dropUnowned deletes the local state of every (store, task) not in owned
// that was last owned (or began a restore from nothing) CleanupDelay or
// longer ago, or at an unknown time.
// It runs on the goroutine that drives the session's state, so no
// transaction writes the pairs it wipes, and it skips those a claim is
// restoring.
func (r *restorer) dropUnowned(owned []statestore.StoreTask) error {
	kept, err := r.db.Kept()
	if err != nil {
		return fmt.Errorf("engine: state cleanup: %w", err)
	}
	now := r.now()
	for st, at := range kept {
		if slices.Contains(owned, st) || r.isRestoring(st) || !at.IsZero() && now.Sub(at) < r.cleanupDelay {
			continue
		}
		if err := r.db.Wipe(st.Store, st.Task); err != nil {
			return fmt.Errorf("engine: state cleanup: %w", err)
		}
		r.m.dropped.Inc()
		r.log.Info("deleted the local state of a task not owned for the cleanup delay", "store", st.Store, "task", st.Task.String(), "last_owned", at, "delay", r.cleanupDelay)
	}
	return nil
}

// keeper refreshes the last-owned times of a session's tasks after its
// commits and deletes the state of tasks it no longer owns. It belongs to
// the session's driver.
type keeper struct {
	owned   []statestore.StoreTask
	marked  time.Time // last MarkOwned
	cleaned time.Time // last dropUnowned
}

// committed runs after a commit that began at began succeeded: the group
// accepted the commit, so the replica owned its tasks then. A failure here
// is logged: the commit stands, and a missing mark only makes the state
// look older than it is.
func (k *keeper) committed(r *restorer, began time.Time) {
	if began.Sub(k.marked) >= markEvery && len(k.owned) > 0 {
		if err := r.db.MarkOwned(began, k.owned...); err != nil {
			r.log.Warn("cannot record the tasks as owned", "error", err)
		}
		k.marked = began
	}
	if now := r.now(); now.Sub(k.cleaned) >= min(r.cleanupDelay/2, time.Minute) {
		k.cleaned = now
		if err := r.dropUnowned(k.owned); err != nil {
			r.log.Warn("state cleanup failed", "error", err)
		}
	}
}
