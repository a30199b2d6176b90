package engine

// The restorer: the machine that brings a session's local state up to its
// changelogs (restore.go), wipes state too old to trust and deletes state
// no longer owned (staleness.go), and measures the state's size
// (statesize.go). The session's setup and the claim path call it; it
// reaches Kafka only through its changelog reader.

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/statestore"
)

// changelogReader reads changelog partitions to their ends
// (kafka.ChangelogReader).
type changelogReader interface {
	ReadAll(ctx context.Context, ranges []kafka.ChangelogRange, gone func(i int, start int64) error,
		fn func(i int, batch []kafka.ChangelogRecord, next int64) error) error
}

// restorer owns the local state and what restoring needs: the stores,
// the database and the changelog reader (both set once the state is
// open), each
// changelog's partitions and tombstone retention, and the store tasks
// being restored outside the driver.
type restorer struct {
	log          hclog.Logger
	m            *metrics
	g            *graph.Graph
	stores       map[string]storeInfo
	now          func() time.Time
	timeouts     kafka.Timeouts
	cleanupDelay time.Duration
	hooks        Hooks

	db      *statestore.DB    // nil: the topology has no stores
	byTopic map[string]string // changelog topic → store, set with db
	reader  changelogReader   // set with db

	changelogParts  map[string]int32         // each changelog's partitions, grown at session start when inputs grew
	deleteRetention map[string]time.Duration // each changelog's delete.retention.ms
	sizes           stateSizes               // the state-size series shown

	// restoring counts the store tasks being restored outside the
	// driver (claims.go), which the state cleanup must leave alone.
	restoring struct {
		sync.Mutex
		tasks map[statestore.StoreTask]int
	}
}

// newRestorer makes the restorer of e's stores; Run opens the state
// (openState) and sets the reader.
func newRestorer(e *Engine, stores map[string]storeInfo) *restorer {
	return &restorer{log: e.log, m: e.m, g: e.g, stores: stores, now: e.cfg.Now, timeouts: e.cfg.Timeouts,
		cleanupDelay: e.cfg.CleanupDelay, hooks: e.cfg.Hooks}
}

// lacksPartition reports whether st's changelog lacks its task's
// partition: input partitions were added since the changelog was made.
func (r *restorer) lacksPartition(st statestore.StoreTask) bool {
	return st.Task.Partition >= r.changelogParts[r.stores[st.Store].topic]
}

// restoringTasks adds (on) or removes store tasks being restored outside
// the driver: the state cleanup leaves them alone.
func (r *restorer) restoringTasks(sts []statestore.StoreTask, on bool) {
	r.restoring.Lock()
	defer r.restoring.Unlock()
	if r.restoring.tasks == nil {
		r.restoring.tasks = map[statestore.StoreTask]int{}
	}
	for _, st := range sts {
		if on {
			r.restoring.tasks[st]++
		} else if r.restoring.tasks[st]--; r.restoring.tasks[st] <= 0 {
			delete(r.restoring.tasks, st)
		}
	}
}

// isRestoring reports whether st is being restored outside the driver.
func (r *restorer) isRestoring(st statestore.StoreTask) bool {
	r.restoring.Lock()
	defer r.restoring.Unlock()
	return r.restoring.tasks[st] > 0
}
