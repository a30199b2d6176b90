package benchmarks

import (
	"reflect"
	"testing"
)

// TestSchedule checks the rotated order of a point's runs: repeat i starts
// at variant i mod n, and over n repeats every variant takes every
// position once.
func TestSchedule(t *testing.T) {
	got := schedule(3, 4)
	want := [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 1, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schedule(3, 4) = %v, want %v", got, want)
	}
	for _, n := range []int{1, 2, 4, 6} {
		s := schedule(n, n)
		for pos := range n {
			seen := map[int]bool{}
			for _, order := range s {
				seen[order[pos]] = true
			}
			if len(seen) != n {
				t.Errorf("%d variants: position %d held by %v over %d repeats, want every variant", n, pos, seen, n)
			}
		}
	}
	if s := schedule(0, 3); len(s) != 3 || len(s[0]) != 0 {
		t.Errorf("schedule(0, 3) = %v, want three empty repeats", s)
	}
}
