package chaos

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// Each round of the deck deals every entry of Faults once, so a kind
// named twice comes exactly twice as often.
func TestDeckDealsEachEntryOncePerRound(t *testing.T) {
	r := &runner{cfg: Config{Faults: []string{FaultReplicaKill, FaultReplicaKill, FaultNetwork}}, rnd: rand.New(rand.NewPCG(1, 2))}
	for round := range 4 {
		got := map[string]int{}
		for range 3 {
			got[r.nextKind()]++
		}
		if got[FaultReplicaKill] != 2 || got[FaultNetwork] != 1 {
			t.Errorf("round %d dealt %v, want 2 replica-kill and 1 network", round, got)
		}
	}
}

// Of every three broker kills, one aims at each target.
func TestBrokerKillsAimAtEachTargetOncePerThree(t *testing.T) {
	r := &runner{rnd: rand.New(rand.NewPCG(3, 4))}
	for round := range 3 {
		got := map[string]int{}
		for range 3 {
			got[r.nextAim()]++
		}
		if got[aimTxnCoordinator] != 1 || got[aimGroupCoordinator] != 1 || got[aimAny] != 1 {
			t.Errorf("round %d aimed %v, want one of each", round, got)
		}
	}
}

// Rates are drawn as runs of points; a gap in the samples stays a gap.
func TestRateRunsLeaveGaps(t *testing.T) {
	runs := rateRuns([]Sample{{At: 1, Committed: 0}, {At: 2, Committed: 100}, {At: 3, Committed: 300}, {At: 20, Committed: 1000}, {At: 21, Committed: 1200}})
	want := []plotter.XYs{{{X: 2, Y: 100}, {X: 3, Y: 200}}, {{X: 20, Y: 700.0 / 17}, {X: 21, Y: 200}}}
	if len(runs) != len(want) {
		t.Fatalf("%d runs %v, want %d (a gap from 3 s to 20 s)", len(runs), runs, len(want))
	}
	for i := range want {
		if len(runs[i]) != len(want[i]) {
			t.Fatalf("run %d: %v, want %v", i, runs[i], want[i])
		}
		for j := range want[i] {
			if runs[i][j] != want[i][j] {
				t.Errorf("run %d point %d: %v, want %v", i, j, runs[i][j], want[i][j])
			}
		}
	}
	if _, err := Chart(Result{Throughput: []Sample{{At: 1}, {At: 2, Committed: 5}}, Faults: []Fault{{At: 1, Kind: FaultNetwork}}}); err != nil {
		t.Errorf("chart: %v", err)
	}
}
