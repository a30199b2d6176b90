package kafka

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// DefaultMaxMessageBytes is Kafka's default message.max.bytes, used when
// neither a topic's nor the broker's configuration can be read.
const DefaultMaxMessageBytes = 1048588

// BatchOverhead is what a record batch (v2) adds to its records on the
// wire: the log overhead (offset, length) and the batch header. A broker
// measures a produced batch, header included, against max.message.bytes.
const BatchOverhead = 61

// RecordOverhead bounds what the record format adds to one record's key,
// value and headers (length, attributes, timestamp and offset deltas, key
// and value lengths, header count), and HeaderOverhead what it adds to one
// header (its two lengths). They are the bounds sarama itself counts
// against Producer.MaxMessageBytes.
const (
	RecordOverhead = 5*5 + 10 + 1
	HeaderOverhead = 2 * 5
)

// MaxMessageBytes returns each topic's max.message.bytes as the cluster
// applies it: the topic's own setting, or the broker's message.max.bytes it
// inherits. A topic whose configuration cannot be read falls back on the
// broker's message.max.bytes, then on DefaultMaxMessageBytes; the topics
// that fell back are returned in fallback.
func (a *Admin) MaxMessageBytes(topics ...string) (limits map[string]int, fallback []string) {
	limits = map[string]int{}
	broker := 0
	for _, t := range topics {
		n, err := a.describeInt(sarama.ConfigResource{Type: sarama.TopicResource, Name: t, ConfigNames: []string{"max.message.bytes"}}, "max.message.bytes")
		if err == nil {
			limits[t] = n
			continue
		}
		if broker == 0 {
			broker = a.brokerMaxMessageBytes()
		}
		limits[t] = broker
		fallback = append(fallback, t)
	}
	slices.Sort(fallback)
	return limits, fallback
}

// brokerMaxMessageBytes is the message.max.bytes of any broker, or
// DefaultMaxMessageBytes when none answers.
func (a *Admin) brokerMaxMessageBytes() int {
	for _, b := range a.client.Brokers() {
		n, err := a.describeInt(sarama.ConfigResource{Type: sarama.BrokerResource, Name: strconv.Itoa(int(b.ID())), ConfigNames: []string{"message.max.bytes"}}, "message.max.bytes")
		if err == nil {
			return n
		}
	}
	return DefaultMaxMessageBytes
}

// describeInt reads one integer configuration entry.
func (a *Admin) describeInt(r sarama.ConfigResource, name string) (int, error) {
	entries, err := a.describe(r)
	if err != nil {
		return 0, fmt.Errorf("kafka: describe %s of %q: %w", name, r.Name, err)
	}
	for _, e := range entries {
		if e.Name == name {
			n, err := strconv.Atoi(e.Value)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("kafka: %s of %q is %q", name, r.Name, e.Value)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("kafka: %q has no %s", r.Name, name)
}

// GrowPartitions raises topic's partition count to n (new partitions
// start empty) and waits until metadata shows them.
func (a *Admin) GrowPartitions(topic string, n int32) error {
	if err := a.admin.CreatePartitions(topic, n, nil, false); err != nil {
		return fmt.Errorf("kafka: grow %q to %d partitions: %w", topic, n, err)
	}
	for range 150 {
		have, err := a.Partitions(topic)
		if err != nil {
			return err
		}
		if have[topic] >= n {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("kafka: %q does not show %d partitions 30s after growing", topic, n)
}

// TimestampBounds is how far from its own clock a topic's broker accepts
// a record's timestamp: message.timestamp.before.max.ms and
// message.timestamp.after.max.ms. Zero is no bound, as is a bound too
// large for a Duration (Kafka's default before.max.ms is Long.MAX_VALUE).
// A LogAppendTime topic has none: the broker stamps records itself.
type TimestampBounds struct {
	Before, After time.Duration
}

// timestampConfigs are the topic configs TimestampBounds reads.
var timestampConfigs = []string{"message.timestamp.type", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms"}

// TimestampBounds reads the timestamp bounds of topics. A topic whose
// configuration cannot be read gets none, and is returned in unknown.
func (a *Admin) TimestampBounds(topics ...string) (bounds map[string]TimestampBounds, unknown []string) {
	bounds = map[string]TimestampBounds{}
	for _, t := range topics {
		entries, err := a.describe(sarama.ConfigResource{Type: sarama.TopicResource, Name: t, ConfigNames: timestampConfigs})
		if err != nil {
			unknown = append(unknown, t)
			continue
		}
		bounds[t] = timestampBounds(entries)
	}
	slices.Sort(unknown)
	return bounds, unknown
}

// timestampBounds reads the bounds from a topic's config entries.
func timestampBounds(entries []sarama.ConfigEntry) TimestampBounds {
	var b TimestampBounds
	for _, e := range entries {
		switch e.Name {
		case "message.timestamp.type":
			if e.Value == "LogAppendTime" {
				return TimestampBounds{}
			}
		case "message.timestamp.before.max.ms":
			b.Before = boundMillis(e.Value)
		case "message.timestamp.after.max.ms":
			b.After = boundMillis(e.Value)
		}
	}
	return b
}

// boundMillis parses a bound in milliseconds; unparsable, not positive,
// or beyond what a Duration holds (about 292 years) is no bound.
func boundMillis(v string) time.Duration {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 || ms > int64(math.MaxInt64/time.Millisecond) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
