package engine

// The output policy: whether the topics the replica writes accept an
// output, and where its outputs and rejected records go.

import (
	"time"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
)

// outputPolicy decides whether the topics the replica writes would accept
// an output: its size against their max.message.bytes (limits.go), its
// timestamp against their timestamp bounds (stamps.go). A refusal is a
// typed error naming its rejection reason (errTooLarge, errTimestamp), so
// that the executor rejects the input record for it. It also partitions
// outputs and shapes rejected records to fit. It is read once per Run,
// before the first session, and fixed for every session after.
type outputPolicy struct {
	now           func() time.Time
	rejected      string                           // the rejected-records topic
	rejectedParts int32                            // its partitions
	sinkParts     map[string]int32                 // partitions of each topic written
	limit         sizeLimit                        // the largest record any topic written accepts
	stamps        map[string]kafka.TimestampBounds // timestamp bounds of the topics written
}

// refuse returns the typed refusal of an output to topic, or nil: too
// large, or stamped ts outside the topic's bounds by the clock read at now
// (zero: read it).
func (p *outputPolicy) refuse(topic string, key, value []byte, headers []graph.Header, source []byte, ts, now time.Time) error {
	if err := p.checkSize(topic, key, value, headers, source); err != nil {
		return err
	}
	if err := p.refuseStampAt(topic, ts, now); err != nil {
		return err
	}
	return nil // not a nil *errTimestamp, which would be a non-nil error
}
