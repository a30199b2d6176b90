package engine

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
)

// stampMargin is kept inside a topic's timestamp bounds: the broker checks
// a record against its own clock when the batch arrives, a little after
// the replica checked it.
const stampMargin = time.Minute

// errTimestamp is an output whose timestamp its topic refuses.
type errTimestamp struct {
	topic string
	ts    time.Time
	now   time.Time
	after bool // beyond after.max.ms (else before before.max.ms)
	bound time.Duration
}

// RejectReason implements graph.Reasoned.
func (e *errTimestamp) RejectReason() string { return wire.ReasonTimestampOutOfRange }

func (e *errTimestamp) Error() string {
	if e.after {
		return fmt.Sprintf("engine: a record for %s stamped %s is %v ahead of the clock; the topic accepts up to %v (message.timestamp.after.max.ms)",
			e.topic, e.ts.UTC().Format(time.RFC3339Nano), e.ts.Sub(e.now).Round(time.Second), e.bound)
	}
	return fmt.Sprintf("engine: a record for %s stamped %s is %v behind the clock; the topic accepts up to %v (message.timestamp.before.max.ms)",
		e.topic, e.ts.UTC().Format(time.RFC3339Nano), e.now.Sub(e.ts).Round(time.Second), e.bound)
}

// readStamps reads the timestamp bounds of every topic the replica writes.
func (p *outputPolicy) readStamps(admin *kafka.Admin, written []string, log hclog.Logger) {
	var unknown []string
	p.stamps, unknown = admin.TimestampBounds(written...)
	if len(unknown) > 0 {
		log.Warn("cannot read the timestamp bounds of topics; not checking timestamps for them", "topics", unknown)
	}
}

// refuseStamp returns the error the broker would answer a record for topic
// stamped ts with (within stampMargin), or nil. A zero ts, or one before
// 1970 (Kafka's -1, no timestamp), is stamped by the producer with the wall
// clock.
func (p *outputPolicy) refuseStamp(topic string, ts time.Time) *errTimestamp {
	return p.refuseStampAt(topic, ts, time.Time{})
}

// refuseStampAt is refuseStamp with the clock read at now (zero: read it).
func (p *outputPolicy) refuseStampAt(topic string, ts, now time.Time) *errTimestamp {
	b, ok := p.stamps[topic]
	if !ok || ts.Before(time.Unix(0, 0)) {
		return nil
	}
	if now.IsZero() {
		now = p.now()
	}
	if b.After > 0 && ts.After(now.Add(b.After-min(stampMargin, b.After/2))) {
		return &errTimestamp{topic: topic, ts: ts, now: now, after: true, bound: b.After}
	}
	if b.Before > 0 && ts.Before(now.Add(-b.Before+min(stampMargin, b.Before/2))) {
		return &errTimestamp{topic: topic, ts: ts, now: now, bound: b.Before}
	}
	return nil
}

// rejectedStamp is the timestamp of a rejected copy of an input stamped
// ts: ts, unless the rejected topic would refuse it; then the wall clock
// (the error header says what the timestamp was).
func (p *outputPolicy) rejectedStamp(ts time.Time) time.Time {
	if p.refuseStamp(p.rejected, ts) != nil {
		return p.now()
	}
	return ts
}
