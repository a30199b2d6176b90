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
// retention; a broker default (7 days, or a size) would silently delete
// them.

// keepForever are the retention configs of such a topic, and their value.
var keepForever = []string{"retention.ms", "retention.bytes"}

// KeepForeverConfigs returns the configs a topic whose records exist
// nowhere else is created with: retention.ms=-1 and retention.bytes=-1.
func KeepForeverConfigs() map[string]*string {
	out := map[string]*string{}
	for _, name := range keepForever {
		v := "-1"
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
// purpose: every one of retention.ms and retention.bytes with another
// value than -1 (a topic created by an earlier release, by hand, or with
// the broker's defaults) is set to -1. It returns the values it replaced.
// A retention it could not remove is an error wrapping ErrExpiring that
// names the command to run; one it could not read wraps
// ErrRetentionUnknown.
func (a *Admin) KeepForever(topic string) (replaced map[string]string, err error) {
	entries, err := a.describe(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: keepForever})
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrRetentionUnknown, topic, err)
	}
	replaced = map[string]string{}
	for _, e := range entries {
		if slices.Contains(keepForever, e.Name) && e.Value != "-1" {
			replaced[e.Name] = e.Value
		}
	}
	if len(replaced) == 0 {
		return nil, nil
	}
	set := map[string]sarama.IncrementalAlterConfigsEntry{}
	for name := range replaced {
		v := "-1"
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
		want = append(want, name+"=-1")
	}
	return fmt.Errorf("%w: topic %q has %s and setting %s was refused (%w); the application needs ALTER_CONFIGS on it, "+
		"or run: kafka-configs.sh --bootstrap-server HOST:PORT --alter --entity-type topics --entity-name %s --add-config %s; then start again",
		ErrExpiring, topic, strings.Join(have, " "), strings.Join(want, " "), cause, topic, strings.Join(want, ","))
}
