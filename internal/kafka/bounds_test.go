package kafka

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Timestamp bounds come from the topic's configs: Kafka's defaults give an
// hour ahead and no bound behind (Long.MAX_VALUE); LogAppendTime none.
func TestTimestampBounds(t *testing.T) {
	entries := func(typ, before, after string) []sarama.ConfigEntry {
		return []sarama.ConfigEntry{
			{Name: "message.timestamp.type", Value: typ},
			{Name: "message.timestamp.before.max.ms", Value: before},
			{Name: "message.timestamp.after.max.ms", Value: after},
		}
	}
	for _, tc := range []struct {
		name    string
		entries []sarama.ConfigEntry
		want    TimestampBounds
	}{
		{"kafka 4 defaults", entries("CreateTime", "9223372036854775807", "3600000"), TimestampBounds{After: time.Hour}},
		{"both bounded", entries("CreateTime", "86400000", "60000"), TimestampBounds{Before: 24 * time.Hour, After: time.Minute}},
		{"log append time", entries("LogAppendTime", "1000", "1000"), TimestampBounds{}},
		{"unparsable", entries("CreateTime", "x", "-1"), TimestampBounds{}},
		{"absent", nil, TimestampBounds{}},
	} {
		if got := timestampBounds(tc.entries); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
