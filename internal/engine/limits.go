package engine

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
)

// sizeLimit is the largest record the replica produces: every topic it
// writes (outputs, repartition, rejected, changelogs) must accept it,
// because sarama batches a partition's records up to one bound
// (Producer.MaxMessageBytes), whatever their topic. So it is the smallest
// max.message.bytes among those topics.
type sizeLimit struct {
	batch int            // bytes a batch may take on the wire, header included
	topic string         // the topic whose max.message.bytes that is
	of    map[string]int // max.message.bytes of each topic written
}

// producerMax is the producer's MaxMessageBytes: a partition's records, as
// sarama counts them, stay below it, so a batch of them with its header
// stays within the limit.
func (l sizeLimit) producerMax() int { return l.batch - kafka.BatchOverhead }

// readLimits reads max.message.bytes of every topic the replica writes.
func (p *outputPolicy) readLimits(admin *kafka.Admin, written []string, log hclog.Logger) {
	slices.Sort(written)
	written = slices.Compact(written)
	limits, fallback := admin.MaxMessageBytes(written...)
	p.limit = sizeLimit{of: limits}
	for _, t := range written {
		if p.limit.topic == "" || limits[t] < p.limit.batch {
			p.limit.batch, p.limit.topic = limits[t], t
		}
	}
	if len(fallback) > 0 {
		log.Warn("cannot read max.message.bytes of topics; using the broker's", "topics", fallback)
	}
	log.Info("record size limit", "bytes", p.limit.batch, "from_topic", p.limit.topic)
}

// errTooLarge is an output or state change no topic would accept.
type errTooLarge struct {
	topic string
	size  int
	limit sizeLimit
}

// RejectReason implements graph.Reasoned.
func (e *errTooLarge) RejectReason() string { return wire.ReasonTooLarge }

func (e *errTooLarge) Error() string {
	if e.limit.of[e.topic] == e.limit.batch {
		return fmt.Sprintf("engine: a record of %d bytes for %s exceeds the limit of %d bytes (max.message.bytes of %s)",
			e.size, e.topic, e.limit.batch, e.topic)
	}
	return fmt.Sprintf("engine: a record of %d bytes for %s exceeds the limit of %d bytes (max.message.bytes of %s, the smallest among the topics the application writes)",
		e.size, e.topic, e.limit.batch, e.limit.topic)
}

// recordBytes bounds what one record takes in a batch of its own, as a
// broker measures it: batch header, record overhead, key, value and
// headers. With source set, a SourceHeader among headers is replaced by
// it, as the producer does.
func recordBytes(key, value []byte, headers []graph.Header, source []byte) int {
	n := kafka.BatchOverhead + kafka.RecordOverhead + len(key) + len(value)
	for _, h := range headers {
		if source != nil && h.Key == wire.HeaderSource {
			continue
		}
		n += len(h.Key) + len(h.Value) + kafka.HeaderOverhead
	}
	if source != nil {
		n += len(wire.HeaderSource) + len(source) + kafka.HeaderOverhead
	}
	return n
}

// checkSize refuses a record that would exceed the limit (the executor
// rejects the input record for it, even when a node drops the error).
func (p *outputPolicy) checkSize(topic string, key, value []byte, headers []graph.Header, source []byte) error {
	n := recordBytes(key, value, headers, source)
	if n <= p.limit.batch {
		return nil
	}
	return &errTooLarge{topic: topic, size: n, limit: p.limit}
}

// fitRejected cuts a rejected record until it fits the rejected topic:
// the value first, then the input's own headers, then the key; what was
// cut is named in wire.HeaderRejectTruncated with its original size.
func (p *outputPolicy) fitRejected(m *kafka.Message, own int) {
	limit := p.limit.batch
	size := recordBytes(m.Key, m.Value, m.Headers, nil)
	if size <= limit {
		return
	}
	note := "value=" + strconv.Itoa(len(m.Value))
	room := func() int {
		// The note's header is counted at its longest.
		return limit - recordBytes(m.Key, m.Value, m.Headers, nil) - len(wire.HeaderRejectTruncated) - len(note) - kafka.HeaderOverhead - 40
	}
	if over := -room(); over > 0 {
		m.Value = m.Value[:max(len(m.Value)-over, 0)]
	}
	if room() < 0 && own > 0 {
		note += ",headers=" + strconv.Itoa(own)
		m.Headers = slices.Delete(slices.Clone(m.Headers), 0, own)
	}
	if over := -room(); over > 0 {
		note += ",key=" + strconv.Itoa(len(m.Key))
		m.Key = m.Key[:max(len(m.Key)-over, 0)]
	}
	for i, h := range m.Headers {
		// The error text is the last thing that can be cut.
		if over := -room(); over > 0 && h.Key == wire.HeaderRejectError {
			m.Headers[i].Value = h.Value[:max(len(h.Value)-over, 0)]
		}
	}
	m.Headers = append(m.Headers, graph.Header{Key: wire.HeaderRejectTruncated, Value: []byte(note)})
}
