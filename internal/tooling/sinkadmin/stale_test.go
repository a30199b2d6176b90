package sinkadmin

import (
	"testing"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// The ledger as sinks status reads it follows the fence rule of a
// runner's restore: a's writes after b's fence record (an in-flight mark
// over b's success, an expiry delete of the entry b parked) are left out,
// and fence records are no deliveries.
func TestLedgerLeavesOutZombieWrites(t *testing.T) {
	const fence = "\x00onceflow-fence"
	entry := func(s sinkrunner.State, inFlight bool, g int64) []byte {
		return sinkrunner.EncodeEntry(sinkrunner.Entry{State: s, Attempts: 1, InFlight: inFlight, First: t0, Updated: t0, Fence: g})
	}
	rec := func(off int64, key string, v []byte) verify.Record {
		return verify.Record{Partition: 0, Offset: off, Key: []byte(key), Value: v}
	}
	recs := []verify.Record{
		rec(0, fence, []byte("{}")), // a's fence: generation 1
		rec(1, "hook:k1", entry(sinkrunner.Pending, true, 1)),
		rec(2, "hook:k2", entry(sinkrunner.Pending, true, 1)),
		rec(3, "hook:k3", entry(sinkrunner.Succeeded, false, 1)),
		rec(4, fence, []byte("{}")), // b's fence: generation 5
		rec(5, "hook:k1", entry(sinkrunner.Succeeded, false, 5)),
		rec(6, "hook:k2", entry(sinkrunner.Unknown, false, 5)),
		rec(7, "hook:k1", entry(sinkrunner.Pending, true, 1)), // a, a zombie now
		rec(8, "hook:k2", nil),                                // a's expiry delete
		rec(9, "hook:k3", nil),                                // an expiry of a succeeded entry stands
		rec(10, "hook:k4", entry(sinkrunner.Succeeded, false, 0)),
	}
	ds, bad := latest("hook", recs)
	got := map[string]sinkrunner.State{}
	for _, d := range ds {
		got[d.Key] = d.State
	}
	want := map[string]sinkrunner.State{"hook:k1": sinkrunner.Succeeded, "hook:k2": sinkrunner.Unknown, "hook:k4": sinkrunner.Succeeded}
	if bad != 0 || len(got) != len(want) {
		t.Errorf("ledger: %v (%d undecodable), want %v", got, bad, want)
	}
	for k, s := range want {
		if got[k] != s {
			t.Errorf("%s: %q, want %q", k, got[k], s)
		}
	}
}
