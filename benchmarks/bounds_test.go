package benchmarks

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestOneP99Bound checks that the bench's stored p99 target, its table's
// verdict and the targets' bound are the same figure, the commit interval +
// P99OverInterval, at every interval, whatever bound an older results.json
// stored.
func TestOneP99Bound(t *testing.T) {
	if P99OverInterval != 30*time.Millisecond {
		t.Errorf("P99OverInterval = %v, want 30ms", P99OverInterval)
	}
	for _, ci := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		wantMs := ms(ci) + 30
		res := summarize(Point{Workload: "copy", CommitInterval: ci, ValueSize: 100}, 1000, fakeRuns(900, 1000, 1200), nil)
		if res.P99TargetMs != wantMs {
			t.Errorf("%v: bench p99 target %v ms, want %v", ci, res.P99TargetMs, wantMs)
		}
		old := res
		old.P99TargetMs = ms(ci) + 50 // what an older harness stored
		tg := p99Target("p99", &old)
		if want := "≤ " + fmt.Sprint(wantMs) + " ms"; tg.Want != want {
			t.Errorf("%v: targets bound %q, want %q", ci, tg.Want, want)
		}
		var b bytes.Buffer
		rep := &Report{Result: res, Sweep: []Result{res}}
		if err := rep.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if want := "the target of " + fmt.Sprint(wantMs) + " ms (commit interval + 30 ms)"; !strings.Contains(b.String(), want) {
			t.Errorf("%v: table lacks %q:\n%s", ci, want, b.String())
		}
	}
}
