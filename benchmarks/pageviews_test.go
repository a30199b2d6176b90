package benchmarks

import "testing"

// The pageviews input is planned for the run's partitions (a closing
// record for each), and its check wants exactly the truth's windows with
// exactly-once, at least them without; it has no latency runs.
func TestPageviewsWorkload(t *testing.T) {
	wl := workloads["pageviews"]
	in, err := inputOf(wl, 20000, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if in.Len() != 20003 {
		t.Fatalf("%d records, want 20000 views and 3 closing records", in.Len())
	}
	windows := int64(len(in.(pageviewsInput).truth.Windows))
	if windows == 0 {
		t.Fatal("no windows in the truth")
	}
	if err := wl.Check(in, Output{Records: windows}, true); err != nil {
		t.Errorf("exact count refused: %v", err)
	}
	if err := wl.Check(in, Output{Records: windows + 1}, true); err == nil {
		t.Error("a window written twice passed the exactly-once check")
	}
	if err := wl.Check(in, Output{Records: windows + 1}, false); err != nil {
		t.Errorf("at-least-once refused more: %v", err)
	}
	if !throughputOnly(wl) || throughputOnly(workloads["copy"]) {
		t.Error("only pageviews skips latency runs")
	}
	if r := in.Record(0); !r.Timestamp.IsZero() || len(r.Key) == 0 {
		t.Errorf("record 0 %+v: want a key and no timestamp", r)
	}
}
