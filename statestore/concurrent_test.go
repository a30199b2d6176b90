package statestore

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
)

// TestConcurrentTasks runs one Txn per task on its own goroutine, as a
// runtime with a goroutine per task may, alongside restores and readers.
func TestConcurrentTasks(t *testing.T) {
	db := openT(t, "", Options{DedupStores: []string{"dedup"}})
	const tasks, rounds = 4, 30
	var wg sync.WaitGroup
	errs := make(chan error, tasks*2+1)
	for p := range int32(tasks) {
		wg.Go(func() {
			task := Task{0, p}
			for i := range rounds {
				tx := db.Begin()
				err := tx.Put("s", task, fmt.Appendf(nil, "k%03d", i), strconv.AppendInt(nil, int64(i), 10))
				if err == nil {
					err = tx.PutDedup("dedup", task, fmt.Appendf(nil, "id%03d", i), entry(int64(i), "x"))
				}
				if err == nil {
					err = tx.Apply(map[StoreTask]int64{{"s", task}: int64(i + 1), {"dedup", task}: int64(i + 1)})
				}
				if err != nil {
					tx.Discard()
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			task := Task{1, p}
			for i := range rounds {
				if err := db.Restore("r", task, []Change{{Key: fmt.Appendf(nil, "k%03d", i), Value: []byte("v")}}, int64(i+1)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range rounds {
			if _, err := db.Tasks(); err != nil {
				errs <- err
				return
			}
			if _, _, err := db.Get("s", Task{0, 0}, []byte("k000")); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for p := range int32(tasks) {
		for _, st := range []StoreTask{{"s", Task{0, p}}, {"dedup", Task{0, p}}, {"r", Task{1, p}}} {
			wantOffset(t, db, st.Store, st.Task, rounds, true)
			if got := dbRange(t, db, st.Store, st.Task); len(got) != rounds {
				t.Errorf("%s holds %d keys, want %d", st, len(got), rounds)
			}
		}
	}
	if got, err := db.Tasks(); err != nil || len(got) != 3*tasks {
		t.Errorf("Tasks = %v, %v; want %d pairs", got, err, 3*tasks)
	}
}
