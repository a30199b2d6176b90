package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/statestore"
)

// The state-size gauge has a series at zero for each store task a session
// owns, the watchdog measures it every stateSizeInterval (not on every
// tick), writes not flushed yet count, and a task whose state is gone
// loses its series.
func TestStateSizeMeasuredPeriodically(t *testing.T) {
	var nowNanos atomic.Int64 // the watchdog reads the clock while the test moves it
	clock := func() time.Time { return time.Unix(0, nowNanos.Load()) }
	nowNanos.Store(time.Unix(1000, 0).UnixNano())
	m, err := newMetrics(prometheus.NewRegistry(), "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	db, err := statestore.Open("", statestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &Engine{cfg: Config{StallTimeout: time.Minute, Now: clock}, m: m, log: hclog.NewNullLogger(), commits: commitWatch{progress: newProgress(clock)}}
	e.restorer = newRestorer(e, nil)
	e.restorer.db = db
	a := statestore.StoreTask{Store: "totals", Task: statestore.Task{SubTopology: 0, Partition: 0}}
	b := statestore.StoreTask{Store: "totals", Task: statestore.Task{SubTopology: 0, Partition: 1}}
	e.restorer.sizes.own([]statestore.StoreTask{a, b})
	e.restorer.measureState() // as a session's start does
	if got := e.storeSizes(); fmt.Sprint(got) != "[{totals 0_0 0} {totals 0_1 0}]" {
		t.Fatalf("sizes at the session's start: %v, want both owned tasks at 0", got)
	}

	write := func(st statestore.StoreTask, kb int, flush bool) {
		t.Helper()
		tx := db.Begin()
		for i := range kb {
			if err := tx.Put(st.Store, st.Task, fmt.Appendf(nil, "k%05d", i), bytes.Repeat([]byte("v"), 1000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Apply(map[statestore.StoreTask]int64{st: int64(kb)}); err != nil {
			t.Fatal(err)
		}
		if !flush {
			return
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	size := func(st statestore.StoreTask) int64 {
		for _, s := range e.storeSizes() {
			if s.Store == st.Store && s.Task == st.Task.String() {
				return s.Bytes
			}
		}
		return -1
	}

	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.watch(ctx, tick)
	}()
	// tickAt moves the clock and lets the watchdog run one round; the
	// second send returns once the first round is over.
	tickAt := func(d time.Duration) {
		now := time.Unix(1000, 0).Add(d)
		nowNanos.Store(now.UnixNano())
		tick <- now
		tick <- now
	}

	write(b, 200, true)
	tickAt(0)
	if n := size(b); n < 200_000 {
		t.Errorf("totals/0_1 after the first tick: %d bytes, want at least 200 KB", n)
	}
	if n := int64(m.stateDisk.value()); n < 200_000 {
		t.Errorf("state disk bytes: %d, want at least 200 KB", n)
	}
	write(a, 100, false) // in the memtable: counted by reading the keys
	tickAt(10 * time.Second)
	if n := size(a); n > 5000 {
		t.Errorf("totals/0_0 measured 10 s after the last measurement: %d bytes; want the old value (the interval is %v)", n, stateSizeInterval)
	}
	tickAt(stateSizeInterval)
	if n := size(a); n < 100_000 {
		t.Errorf("totals/0_0 after %v: %d bytes, want at least 100 KB", stateSizeInterval, n)
	}

	if err := db.Wipe(b.Store, b.Task); err != nil {
		t.Fatal(err)
	}
	e.restorer.sizes.own([]statestore.StoreTask{a}) // the next session owns a alone
	tickAt(2 * stateSizeInterval)
	if n := size(b); n != -1 {
		t.Errorf("totals/0_1 wiped and not owned still has a series: %d bytes", n)
	}
	if n := size(a); n < 100_000 {
		t.Errorf("totals/0_0: %d bytes, want at least 100 KB", n)
	}
	cancel()
	<-done
}

// onceflow_state_disk_bytes, and Status's StateDisk, is what du reports
// for the state directory: the blocks allocated to its files and to
// itself (Stat_t.Blocks*512), not the files' lengths; the write-ahead log
// reserves blocks ahead of its end, so the two differ while it is open.
func TestStateDiskBytesIsDu(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), "app", "r1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, err := statestore.Open(dir, statestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := &Engine{m: m, log: hclog.NewNullLogger()}
	e.restorer = newRestorer(e, nil)
	e.restorer.db = db
	st := statestore.StoreTask{Store: "totals", Task: statestore.Task{SubTopology: 0, Partition: 0}}
	put := func(from, n int) {
		t.Helper()
		tx := db.Begin()
		for i := from; i < from+n; i++ {
			if err := tx.Put(st.Store, st.Task, fmt.Appendf(nil, "k%06d", i), bytes.Repeat([]byte("v"), 1000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Apply(map[statestore.StoreTask]int64{st: int64(from + n)}); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 2000)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	put(2000, 100) // in the log and the memtable only
	e.restorer.measureState()

	var du int64
	err = filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		var s syscall.Stat_t
		if err := syscall.Lstat(path, &s); err != nil {
			return err
		}
		du += s.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(m.stateDisk.value()); got != du {
		t.Errorf("onceflow_state_disk_bytes %d, allocated blocks under the state directory %d", got, du)
	}
	if got := int64(e.restorer.sizes.usage().Disk); got != du {
		t.Errorf("StateDisk %d, allocated blocks under the state directory %d", got, du)
	}
	if du < 2000*1000 {
		t.Errorf("allocated blocks under the state directory: %d, want at least the 2 MB flushed", du)
	}
}
