package kafka

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/IBM/sarama"
)

// Some topics hold records that exist nowhere else until something handles
// them: repartition and outbox topics until their reader has committed past
// them (it then deletes them itself), dead-letter and rejected topics until
// an operator has looked. They keep their records with no time or size
// retention, and are not compacted; a broker default (7 days, a size,
// compaction, which keeps only the latest record of a key) would silently
// delete them.

// keepForever are the configs of such a topic and the value each must have.
func keepForever() map[string]string {
	return map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"}
}

// KeepForeverConfigs returns the configs a topic whose records exist
// nowhere else is created with: retention.ms=-1, retention.bytes=-1,
// cleanup.policy=delete.
func KeepForeverConfigs() map[string]*string {
	out := map[string]*string{}
	for name, v := range keepForever() {
		out[name] = &v
	}
	return out
}

// ErrExpiring means a topic whose records exist nowhere else has a
// retention that will delete them, and this client could not remove it.
// Not retryable: the error says what to run (or which ACL to grant).
var ErrExpiring = errors.New("kafka: a topic whose records exist nowhere else would delete them")

// ErrRetentionUnknown means the retention of such a topic could not be
// read (no DESCRIBE_CONFIGS on it): it may delete records. The caller
// warns and goes on, as for the other configs it reads.
var ErrRetentionUnknown = errors.New("kafka: cannot read the topic's retention")

// KeepForever makes topic keep its records until they are deleted on
// purpose: every one of retention.ms, retention.bytes (-1) and
// cleanup.policy (delete) with another value (a topic created by an
// earlier release, by hand, or with the broker's defaults) is set. It
// returns the values it replaced. A retention it could not remove is an
// error wrapping ErrExpiring that names the command to run; one it could
// not read wraps ErrRetentionUnknown.
func (a *Admin) KeepForever(topic string) (replaced map[string]string, err error) {
	want := keepForever()
	entries, err := a.describe(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: slices.Sorted(maps.Keys(want))})
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrRetentionUnknown, topic, err)
	}
	replaced = map[string]string{}
	for _, e := range entries {
		if w, ok := want[e.Name]; ok && e.Value != w {
			replaced[e.Name] = e.Value
		}
	}
	if len(replaced) == 0 {
		return nil, nil
	}
	set := map[string]sarama.IncrementalAlterConfigsEntry{}
	for name := range replaced {
		v := want[name]
		set[name] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
	}
	if err := a.admin.IncrementalAlterConfig(sarama.TopicResource, topic, set, false); err != nil {
		return nil, expiring(topic, replaced, err)
	}
	return replaced, nil
}

// expiring is the error of a retention KeepForever could not remove: what
// the topic has, what that does, and how to change it.
func expiring(topic string, replaced map[string]string, cause error) error {
	var have, want []string
	for _, name := range slices.Sorted(maps.Keys(replaced)) {
		have = append(have, name+"="+replaced[name])
		want = append(want, name+"="+keepForever()[name])
	}
	return fmt.Errorf("%w: topic %q has %s and setting %s was refused (%w); the application needs ALTER_CONFIGS on it, "+
		"or run: kafka-configs.sh --bootstrap-server HOST:PORT --alter --entity-type topics --entity-name %s --add-config %s; then start again",
		ErrExpiring, topic, strings.Join(have, " "), strings.Join(want, " "), cause, topic, strings.Join(want, ","))
}
