package engine

import (
	"time"

	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/statestore"
)

// newTaskState builds the state a session's records are processed on: the
// topology's stores, with the replica's clock, its changelog size limit and
// the lineage of the record being processed.
func (d *driver) newTaskState() *taskstate.State {
	e := d.e
	stores := make(map[string]taskstate.Store, len(e.restorer.stores))
	for name, s := range e.restorer.stores {
		stores[name] = taskstate.Store{Store: s.Store, Sub: s.sub}
	}
	logged := map[statestore.Task]bool{}
	return taskstate.New(taskstate.Config{
		Stores:       stores,
		MaxClockSkew: e.cfg.MaxClockSkew,
		Now:          e.cfg.Now,
		CheckChange:  d.checkChange,
		Source:       d.em.source,
		Skewed: func(task statestore.Task, ts time.Time) {
			e.m.skewed.Inc()
			if !logged[task] {
				logged[task] = true
				e.log.Warn("record timestamp is beyond the wall clock plus the allowed skew; stream time advances only to that bound (logged once per task and session)",
					"task", task.String(), "source", d.em.source(), "timestamp", ts, "max_clock_skew", e.cfg.MaxClockSkew)
			}
		},
	})
}

// expireDedup removes, per task, dedup entries older than its stream time
// minus the store's retention, at most 10,000 per store and task in one
// transaction; their tombstones join the changelog.
func (d *driver) expireDedup() error {
	n, err := d.state.Expire(10000)
	d.e.m.expired.Add(float64(n))
	return err
}
