package engine

// The local state's size: measured from Pebble's file metadata every
// stateSizeInterval by the watchdog and at the start of each session,
// never on the record path.

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onceflow/onceflow/statestore"
)

// stateSizeInterval is how often the local state's size is measured.
const stateSizeInterval = 30 * time.Second

// Keyspaces whose tables Pebble estimates below exactLimit are measured
// exactly, by reading their keys (writes still in the memtable, which the
// estimate misses, included), as long as one measurement has read less
// than exactBudget.
const (
	exactLimit  = 8 << 20
	exactBudget = 32 << 20
)

// stateSizes remembers which (store, task) series the state-size gauge
// has, so that a task whose state is gone loses its series, and the whole
// database's last measured footprint, which the disk and memtable gauges
// and Status report.
type stateSizes struct {
	mu struct {
		sync.Mutex
		owned    []statestore.StoreTask // the session's store tasks: shown even while empty
		shown    map[statestore.StoreTask]bool
		measured time.Time
		usage    statestore.Usage
	}
}

// usage returns the database's last measured footprint.
func (s *stateSizes) usage() statestore.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.usage
}

// own notes the store tasks of a new session (nil when it ends).
func (s *stateSizes) own(owned []statestore.StoreTask) {
	s.mu.Lock()
	s.mu.owned = slices.Clone(owned)
	s.mu.Unlock()
}

// due reports whether a measurement is due at now, and if so notes it.
func (s *stateSizes) due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mu.measured.IsZero() && now.Sub(s.mu.measured) < stateSizeInterval {
		return false
	}
	s.mu.measured = now
	return true
}

// measureState sets the state-size gauges: one series per store task
// owned now or kept on disk (the rest are deleted), and the database's
// disk bytes (the blocks its directory occupies, as du reports them) and
// memtable bytes. A failed read is logged and leaves the gauges as they
// were.
func (r *restorer) measureState() {
	if r.db == nil {
		return
	}
	kept, err := r.db.Tasks()
	if err != nil {
		r.log.Warn("cannot list the state's tasks to measure them", "error", err)
		return
	}
	s := &r.sizes
	s.mu.Lock()
	defer s.mu.Unlock()
	began := time.Now()
	now := map[statestore.StoreTask]bool{}
	budget := int64(exactBudget)
	for _, st := range append(kept, s.mu.owned...) {
		if now[st] {
			continue
		}
		n, err := r.storeBytes(st, &budget)
		if err != nil {
			r.log.Warn("cannot measure a store", "store", st.Store, "task", st.Task.String(), "error", err)
			continue
		}
		now[st] = true
		r.m.stateBytes.set(storeTaskName{st.Store, st.Task.String()}, n)
	}
	for st := range s.mu.shown {
		if !now[st] {
			r.m.stateBytes.drop(storeTaskName{st.Store, st.Task.String()})
		}
	}
	s.mu.shown = now
	if u, err := r.db.Usage(); err != nil {
		r.log.Warn("cannot measure the state's disk use", "error", err)
	} else {
		s.mu.usage = u
		r.m.stateDisk.Set(float64(u.Disk))
		r.m.stateMemTable.Set(float64(u.MemTable))
	}
	r.log.Debug("state measured", "stores", len(now), "read_exactly", exactBudget-budget, "took", time.Since(began))
}

// storeBytes measures one store of one task: exactly while small and
// within budget (which it spends), else Pebble's estimate of its tables.
func (r *restorer) storeBytes(st statestore.StoreTask, budget *int64) (int64, error) {
	est, err := r.db.Size(st.Store, st.Task)
	if err != nil || est >= exactLimit || *budget <= 0 {
		return int64(est), err
	}
	n, complete, err := r.db.LiveBytes(st.Store, st.Task, min(*budget, exactLimit))
	*budget -= n
	if err != nil || !complete {
		return int64(est), err
	}
	return n, nil
}

// StoreSize is the measured size of one store of one task.
type StoreSize struct {
	Store, Task string
	Bytes       int64
}

// storeSizes reads the measured store sizes, sorted by store and task.
func (e *Engine) storeSizes() []StoreSize {
	var out []StoreSize
	for st, n := range e.m.stateBytes.values() {
		out = append(out, StoreSize{Store: st.store, Task: st.task, Bytes: n})
	}
	slices.SortFunc(out, func(a, b StoreSize) int {
		return cmp.Or(strings.Compare(a.Store, b.Store), cmp.Compare(len(a.Task), len(b.Task)), strings.Compare(a.Task, b.Task))
	})
	return out
}
