package pageviews_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/examples/pageviews"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
	"github.com/onceflow/onceflow/topology/topologytest"
)

// One final count per user and hour, the out-of-order view within grace
// included, the one beyond it rejected as late.
func TestPageviews(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	d, err := topologytest.New(pageviews.Topology("views", "hourly"), topologytest.Config{WallClock: start.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "views", serde.String(), serde.JSON[pageviews.View]())
	view := func(user string, at time.Duration) {
		t.Helper()
		// The record's own timestamp is the wall clock: the value's "at" counts.
		if err := in.Pipe(user, pageviews.View{User: user, Page: "/", At: start.Add(at).UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	view("ann", 10*time.Minute)
	view("bob", 20*time.Minute)
	view("ann", 62*time.Minute)
	view("ann", 58*time.Minute) // out of order, within grace
	view("ann", 66*time.Minute) // closes 10:00-11:00
	view("bob", 40*time.Minute) // late
	view("ann", 3*time.Hour)    // closes 11:00-12:00
	rs, err := topologytest.Output(d, "hourly", pageviews.KeyCodec(), serde.Int64()).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range rs {
		got[r.Key.Key+"@"+r.Key.Start.UTC().Format("15:04")] = r.Value
	}
	want := map[string]int64{"ann@10:00": 2, "bob@10:00": 1, "ann@11:00": 2}
	if len(rs) != len(want) {
		t.Errorf("%d results %v, want %v", len(rs), got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d", k, got[k], n)
		}
	}
	if rej := d.Rejections(); len(rej) != 1 || rej[0].Reason != topology.ReasonLate {
		t.Errorf("rejections %+v, want one late", rej)
	}
}
