package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
)

// An output is refused when its topic's broker would refuse its timestamp,
// a margin inside the bound; a topic without bounds (or not known) takes
// any; the rejected copy of an input falls back on the clock only when
// the rejected topic would refuse the input's own timestamp.
func TestRefuseStamp(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := &outputPolicy{
		now:      func() time.Time { return now },
		rejected: "app-rejected",
		stamps: map[string]kafka.TimestampBounds{
			"out":          {After: time.Hour},
			"old":          {Before: 24 * time.Hour},
			"free":         {},
			"app-rejected": {After: time.Hour},
		},
	}
	for _, tc := range []struct {
		topic   string
		ts      time.Time
		refused bool
	}{
		{"out", now.Add(58 * time.Minute), false},
		{"out", now.Add(59*time.Minute + time.Second), true}, // within the margin
		{"out", now.AddDate(50, 0, 0), true},
		{"out", now.AddDate(-50, 0, 0), false},
		{"old", now.Add(-23 * time.Hour), false},
		{"old", now.Add(-24 * time.Hour), true},
		{"old", now.AddDate(1, 0, 0), false},
		{"free", now.AddDate(50, 0, 0), false},
		{"unknown", now.AddDate(50, 0, 0), false},
		{"out", time.Time{}, false},        // the producer stamps it
		{"old", time.UnixMilli(-1), false}, // none (Kafka's -1): the producer stamps it too
	} {
		if got := e.refuseStamp(tc.topic, tc.ts) != nil; got != tc.refused {
			t.Errorf("%s at %v: refused %v, want %v", tc.topic, tc.ts.Sub(now), got, tc.refused)
		}
	}
	if got := e.rejectedStamp(now.AddDate(50, 0, 0)); !got.Equal(now) {
		t.Errorf("rejected copy of a far-future input stamped %v, want the clock %v", got, now)
	}
	if ts := now.Add(-time.Hour); !e.rejectedStamp(ts).Equal(ts) {
		t.Errorf("rejected copy of an input the topic accepts not stamped with its own time")
	}
}

// The output policy refuses an output with a typed error that names its
// rejection reason (too large first, then out of its topic's timestamp
// bounds), and accepts one that fits with a nil error, not a typed nil.
func TestOutputPolicyRefuses(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := &outputPolicy{now: func() time.Time { return now }, limit: sizeLimit{batch: 1000, topic: "out"},
		stamps: map[string]kafka.TimestampBounds{"out": {After: time.Hour}}}
	reason := func(err error) string {
		var r graph.Reasoned
		if !errors.As(err, &r) {
			return fmt.Sprint(err)
		}
		return r.RejectReason()
	}
	if err := p.refuse("out", []byte("k"), []byte("v"), nil, nil, now, time.Time{}); err != nil {
		t.Errorf("an output that fits refused: %v", err)
	}
	if got := reason(p.refuse("out", nil, make([]byte, 2000), nil, nil, now.AddDate(1, 0, 0), now)); got != wire.ReasonTooLarge {
		t.Errorf("a large output stamped in the future: %s, want %s", got, wire.ReasonTooLarge)
	}
	if got := reason(p.refuse("out", nil, []byte("v"), nil, nil, now.AddDate(1, 0, 0), now)); got != wire.ReasonTimestampOutOfRange {
		t.Errorf("an output stamped in the future: %s, want %s", got, wire.ReasonTimestampOutOfRange)
	}
}
