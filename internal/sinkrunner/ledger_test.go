package sinkrunner

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/sinks"
)

// TestLedgerStateMachine drives the ledger's transitions from
// testdata/ledger.txt.
func TestLedgerStateMachine(t *testing.T) {
	f, err := os.Open("testdata/ledger.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	at := time.Unix(1_700_000_000, 0).UTC()
	var e Entry
	idempotent := false
	lines := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if mode, ok := strings.CutPrefix(line, "sink "); ok {
			e, idempotent = Entry{}, mode == "idempotent"
			continue
		}
		event, want, ok := strings.Cut(line, "->")
		if !ok {
			t.Fatalf("line %d: no ->: %q", n, line)
		}
		at = at.Add(time.Second)
		got, next := step(e, strings.Fields(event), idempotent, at)
		if got != strings.Join(strings.Fields(want), " ") {
			t.Errorf("line %d: %s: got %q, want %q", n, strings.TrimSpace(event), got, strings.TrimSpace(want))
		}
		e = next
		lines++
	}
	if lines < 40 {
		t.Fatalf("only %d transitions read", lines)
	}
}

// step applies one event and describes the outcome.
func step(e Entry, ev []string, idempotent bool, at time.Time) (string, Entry) {
	var next Entry
	var act *Action
	var err error
	switch ev[0] {
	case "resume":
		var a Action
		next, a = e.Resume(idempotent, at)
		act = &a
	case "start":
		next, err = e.Start("in/0/0", at)
	case "succeed":
		next, err = e.Succeed(at)
	case "fail":
		class := map[string]sinks.Class{"transient": sinks.Transient, "permanent": sinks.Permanent, "unknown": sinks.Unknown}[ev[1]]
		var a Action
		next, a, err = e.Fail(class, "boom", idempotent, len(ev) > 2 && ev[2] == "exhausted", at)
		act = &a
	case "dead-lettered":
		next, err = e.DeadLettered(at)
	case "resolve":
		next, err = e.Resolve(State(ev[1]), at)
	case "redrive":
		next, err = e.Redrive(at)
	default:
		return "unknown event " + ev[0], e
	}
	if err != nil {
		return "error", e
	}
	state := next.State
	if state == "" {
		state = "new"
	}
	s := fmt.Sprintf("%s attempts=%d", state, next.Attempts)
	if act != nil {
		s = act.String() + " " + s
	}
	if next.InFlight {
		s += " in-flight"
	}
	// An entry decodes to what was encoded.
	if back, err := DecodeEntry(EncodeEntry(next)); err != nil || !reflect.DeepEqual(back, next) {
		return fmt.Sprintf("round trip: %v %+v", err, back), e
	}
	return s, next
}

// TestExpired: only a succeeded entry settled for longer than the
// retention expires; a negative retention keeps everything.
func TestExpired(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		state     State
		age       time.Duration
		retention time.Duration
		want      bool
	}{
		{Succeeded, 2 * time.Hour, time.Hour, true},
		{Succeeded, time.Hour, time.Hour, false},
		{Succeeded, 30 * time.Minute, time.Hour, false},
		{Succeeded, 1000 * time.Hour, -1, false},
		{DeadLettered, 2 * time.Hour, time.Hour, false},
		{Unknown, 2 * time.Hour, time.Hour, false},
		{Pending, 2 * time.Hour, time.Hour, false},
		{Failed, 2 * time.Hour, time.Hour, false},
	} {
		e := Entry{State: c.state, Updated: now.Add(-c.age)}
		if got := e.expired(c.retention, now); got != c.want {
			t.Errorf("%s, %v old, retention %v: expired %v, want %v", c.state, c.age, c.retention, got, c.want)
		}
	}
}

// TestConflictReasons: when the same key read again is another request.
func TestConflictReasons(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000)
	settled := Entry{State: Succeeded, PayloadHash: payloadHash([]byte("apple")), Requested: at}
	old := Entry{State: Succeeded, PayloadHash: payloadHash([]byte("apple"))} // an earlier release's: no request time
	rec := func(payload string, ts time.Time) *kafka.Record {
		return &kafka.Record{Value: []byte(payload), Timestamp: ts}
	}
	for _, c := range []struct {
		name       string
		e          Entry
		r          *kafka.Record
		defaultKey bool
		conflict   bool
	}{
		{"replay", settled, rec("apple", at), true, false},
		{"another payload", settled, rec("pear", at), false, true},
		{"another time, default key", settled, rec("apple", at.Add(time.Second)), true, true},
		{"another time, key function", settled, rec("apple", at.Add(time.Second)), false, false},
		{"another time, no time kept", old, rec("apple", at.Add(time.Second)), true, false},
		{"no entry", Entry{}, rec("pear", at.Add(time.Second)), true, false},
	} {
		if why := c.e.conflicts(c.r, c.defaultKey); (why != "") != c.conflict {
			t.Errorf("%s: conflict %q, want %v", c.name, why, c.conflict)
		}
	}
}
