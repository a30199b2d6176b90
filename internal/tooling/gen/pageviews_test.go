package gen

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/wire"
)

// The plan injects about the rates asked; the truth counts every view on
// time in one window and the others as late; one flush record lands on
// each partition, after every view.
func TestPlanPageviews(t *testing.T) {
	cfg := PageviewsConfig{Topic: "views", Events: 100_000, Seed: 7, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	plan, truth := PlanPageviews(cfg, 6)
	if len(plan) != 100_000+6 || len(truth.Flush) != 6 {
		t.Fatalf("%d records, %d flush keys; want 100006 and 6", len(plan), len(truth.Flush))
	}
	var counted int64
	for _, n := range truth.Windows {
		counted += n
	}
	if int(counted)+truth.Late != cfg.Events {
		t.Errorf("%d views in windows + %d late != %d views", counted, truth.Late, cfg.Events)
	}
	if truth.Late < 900 || truth.Late > 1100 || truth.OutOfOrder < 4700 || truth.OutOfOrder > 5300 {
		t.Errorf("late %d (want about 1000), out of order %d (want about 5000)", truth.Late, truth.OutOfOrder)
	}
	seen := map[int32]bool{}
	last := plan[cfg.Events-1].Value.At
	for _, v := range plan[cfg.Events:] {
		seen[wire.Partition([]byte(v.Key), 0, 6)] = true
		if v.Value.At <= last {
			t.Errorf("flush record %s at %d, not after the last view", v.Key, v.Value.At)
		}
	}
	if len(seen) != 6 {
		t.Errorf("flush records on %d partitions, want 6", len(seen))
	}
	again, _ := PlanPageviews(cfg, 6)
	if again[500] != plan[500] {
		t.Error("the same seed planned other records")
	}
}
