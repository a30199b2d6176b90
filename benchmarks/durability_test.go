package benchmarks

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestDurabilityNote: the note states what each system fsyncs and keeps,
// from the figures in the code, and stands beside every table with Kafka
// Streams in it and in TARGETS.md; a table without Kafka Streams has none.
func TestDurabilityNote(t *testing.T) {
	note := DurabilityNote()
	for _, want := range []string{"pebble.Sync", "setDisableWAL(true)", "changelog topics are the durable copy",
		"for 7 days of event time", "SHA-256 forever", "256 MB block cache", "64 MB memtables", "read cache of 65536 entries"} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	ks := Measurement{Variant: "kstreams_eos", Phase: PhaseThroughput, Check: "ok", RecordsPerSec: 100, CPUSecPerMillion: 20}
	eos := Measurement{Variant: "eos", Phase: PhaseThroughput, Check: "ok", RecordsPerSec: 100, CPUSecPerMillion: 10}
	for _, tc := range []struct {
		name string
		runs []Measurement
		want bool
	}{{"with Kafka Streams", []Measurement{eos, ks}, true}, {"without", []Measurement{eos}, false}} {
		res := summarize(Point{Workload: "orders", CommitInterval: 100 * time.Millisecond}, 100, tc.runs, nil)
		var b bytes.Buffer
		if err := (&Report{Result: res, Sweep: []Result{res}}).WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), note); got != tc.want {
			t.Errorf("%s: note in the table %v, want %v:\n%s", tc.name, got, tc.want, b.String())
		}
	}
	var b bytes.Buffer
	if err := WriteTargets(&b, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "## Durability and dedup\n\n"+note) {
		t.Errorf("TARGETS.md lacks the note:\n%s", b.String())
	}
}
