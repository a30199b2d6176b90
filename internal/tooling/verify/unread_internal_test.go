package verify

import (
	"context"
	"testing"
)

// Past its budget, unread counts a partition by its offsets (markers
// included, an upper bound) and says the count is not exact; it reads
// nothing for it.
func TestUnreadPastBudgetCountsOffsets(t *testing.T) {
	spans := []span{{partition: 0, from: 10, to: 30}, {partition: 1, from: 0, to: 5}}
	counts, exact, err := unread(context.Background(), nil, "t", [16]byte{}, spans, 4)
	if err != nil {
		t.Fatal(err)
	}
	if exact || counts[0] != 20 || counts[1] != 5 {
		t.Errorf("counts %v exact %v, want 20 and 5 offsets, not exact", counts, exact)
	}
}
