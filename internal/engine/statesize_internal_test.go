package engine

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
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
	e := &Engine{cfg: Config{StallTimeout: time.Minute, Now: clock}, m: m, log: hclog.NewNullLogger(), progress: newProgress(clock), db: db}
	a := statestore.StoreTask{Store: "totals", Task: statestore.Task{SubTopology: 0, Partition: 0}}
	b := statestore.StoreTask{Store: "totals", Task: statestore.Task{SubTopology: 0, Partition: 1}}
	e.sizes.own([]statestore.StoreTask{a, b})
	e.measureState() // as a session's start does
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
	if n := gaugeValue(m.stateDisk); n < 200_000 {
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
	e.sizes.own([]statestore.StoreTask{a}) // the next session owns a alone
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
