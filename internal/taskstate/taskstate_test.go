package taskstate_test

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/taskstate"
	"github.com/onceflow/onceflow/statestore"
)

// step is one input record of a task with a dedup gate: its event id and
// timestamp (after base), and what happens to it after the gate.
type step struct {
	id      string
	at      time.Duration
	failed  bool // a later stage fails: the record's writes roll back
	windows bool // a window stage of the task observes its timestamp too
}

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// decide runs steps through one dedup store (retention one hour), each in
// a transaction of its own applied to Pebble as a replica does, and
// returns the gate's decisions. restart > 0 starts a new State (a restart
// or a move: the stream time recovered from the state) before step
// restart.
func decide(t *testing.T, steps []step, restart int) []string {
	t.Helper()
	db, err := statestore.Open("", statestore.Options{DedupStores: []string{"dedup"}, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := taskstate.Config{
		Stores:       map[string]taskstate.Store{"dedup": {Store: graph.Store{Name: "dedup", Kind: graph.StoreDedup, Retention: time.Hour}}},
		MaxClockSkew: time.Hour,
		Now:          func() time.Time { return base.Add(24 * time.Hour) },
	}
	s := taskstate.New(cfg)
	task := statestore.Task{}
	var out []string
	for i, st := range steps {
		if i == restart && restart > 0 {
			s = taskstate.New(cfg)
		}
		txn := db.Begin()
		s.Begin(txn)
		s.SetTask(task)
		mark := s.Mark()
		res, err := s.Dedup("dedup", []byte(st.id), sha256.Sum256([]byte(st.id)), base.Add(st.at))
		if err != nil {
			t.Fatal(err)
		}
		if st.windows {
			if _, err := s.ObserveTime(base.Add(st.at)); err != nil {
				t.Fatal(err)
			}
		}
		if st.failed {
			s.Rollback(mark)
		}
		if err := s.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Expire(0); err != nil {
			t.Fatal(err)
		}
		if err := txn.Apply(map[statestore.StoreTask]int64{{Store: "dedup", Task: task}: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
		s.Begin(nil)
		out = append(out, fmt.Sprintf("%s@%v:%v", st.id, st.at, []string{"new", "duplicate", "conflict"}[res]))
	}
	return out
}

// A dedup gate decides the same with or without a restart between two
// records: its stream time is what the state holds, so a record that left
// no entry (a duplicate, a record failed after the gate, a timestamp only a
// window stage saw) moves it for neither run.
func TestDedupDecisionsSurviveARestart(t *testing.T) {
	m := time.Minute
	tail := []step{{id: "b", at: 10 * m}, {id: "b", at: 75 * m}}
	for name, head := range map[string][]step{
		"a duplicate":                    {{id: "a"}, {id: "a", at: 50 * m}},
		"a record failed after the gate": {{id: "a"}, {id: "c", at: 50 * m, failed: true}},
		"a window stage's timestamp":     {{id: "a"}, {id: "d", at: 5 * m, windows: true}, {id: "a", at: 50 * m, windows: true}},
	} {
		t.Run(name, func(t *testing.T) {
			steps := append(slices.Clone(head), tail...)
			straight := decide(t, steps, 0)
			restarted := decide(t, steps, len(head))
			if !slices.Equal(straight, restarted) {
				t.Errorf("decisions differ across a restart before step %d:\n straight:  %v\n restarted: %v", len(head), straight, restarted)
			}
		})
	}
}
