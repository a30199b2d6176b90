package processor

import (
	"errors"
	"strings"

	"github.com/onceflow/onceflow/internal/engine"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/statedir"
)

// Errors Run returns, for callers to branch on with errors.Is. Each says
// whether running again can succeed without a change (Retryable).
var (
	// ErrUnreachable: no broker answered. Retryable: run again when the
	// cluster is back.
	ErrUnreachable = errors.New("processor: brokers unreachable")
	// ErrTopicMissing: an input topic does not exist. Not retryable until
	// the topic is created.
	ErrTopicMissing = errors.New("processor: input topic does not exist")
	// ErrInstanceFenced: another live replica joined with the same
	// instance id. Not retryable: give each replica its own InstanceID.
	ErrInstanceFenced = errors.New("processor: another replica has the same instance id")
	// ErrRepeatedFailure: the same input kept failing in a way no
	// rejection could settle (the error names the record). Not retryable
	// without a fix (the cluster, the topic configs, the topology).
	ErrRepeatedFailure = errors.New("processor: the same input keeps failing")
	// ErrOffsetOutOfRange: the committed offset of an internal topic is
	// below its log start, so records the application wrote are gone. Not
	// retryable: nothing is skipped silently; see the error for the fix.
	ErrOffsetOutOfRange = errors.New("processor: committed offset of an internal topic is out of range")
	// ErrTaskSplit: the group gave this replica some, not all, of the
	// topic-partitions of a task (partition p of every topic a
	// sub-topology reads), so merged, joined or aggregated records would
	// be counted on two replicas. Nothing of that assignment is processed.
	// Not retryable without a change: every member of the group must run
	// the same application and release.
	ErrTaskSplit = errors.New("processor: a task's partitions were split across replicas")
	// ErrRetention: a topic whose records exist nowhere else (a
	// dead-letter, rejected, outbox or repartition topic) has a time or
	// size retention that would delete them, and the cluster refused to
	// remove it. Not retryable until the topic's retention.ms and
	// retention.bytes are -1 (the error says what to run).
	ErrRetention = errors.New("processor: a topic would delete records that exist nowhere else")
	// ErrNotCopartitioned: the topics one sub-topology reads (merged
	// topics, a repartition topic beside a source) have different
	// partition counts, at start or because one grew while the replicas
	// ran; the partitions only some of them have could not be processed.
	// Not retryable: give them one partition count.
	ErrNotCopartitioned = errors.New("processor: input topics of one sub-topology are not co-partitioned")
	// ErrResetUnfinished: `onceflow reset` of the application began and
	// did not finish (its marker topic "<app id>-reset-in-progress"
	// exists): the replica would process from input offsets that do not
	// match its emptied state. Not retryable until the reset is run again
	// to its end.
	ErrResetUnfinished = errors.New("processor: a reset of the application did not finish")
	// ErrStopTimeout: Run did not finish its shutdown within StopBound
	// and returned; the clients close in the background. Retryable: the
	// next run aborts whatever the replica left open.
	ErrStopTimeout = errors.New("processor: stop did not finish within its bound")
	// ErrStateDirInUse: another process holds Config.StateDir (the error
	// names its pid). Retryable once that process stops; give each
	// replica its own directory.
	ErrStateDirInUse = errors.New("processor: state dir in use by another process")
)

// kinds maps the runtime's errors to the public ones.
var kinds = []struct {
	internal, public error
	retryable        bool
}{
	{kafka.ErrUnreachable, ErrUnreachable, true},
	{kafka.ErrTopicMissing, ErrTopicMissing, false},
	{kafka.ErrFencedInstance, ErrInstanceFenced, false},
	{engine.ErrRepeatedFailure, ErrRepeatedFailure, false},
	{kafka.ErrInternalOffsetOutOfRange, ErrOffsetOutOfRange, false},
	{engine.ErrTaskSplit, ErrTaskSplit, false},
	{kafka.ErrExpiring, ErrRetention, false},
	{engine.ErrNotCopartitioned, ErrNotCopartitioned, false},
	{engine.ErrResetUnfinished, ErrResetUnfinished, false},
	{engine.ErrStopTimeout, ErrStopTimeout, true},
	{statedir.ErrInUse, ErrStateDirInUse, true},
}

// Retryable reports whether err, returned by Run, may not recur when Run is
// called again without a change: the brokers were unreachable, or a stop
// ran out of time.
func Retryable(err error) bool {
	for _, k := range kinds {
		if errors.Is(err, k.public) {
			return k.retryable
		}
	}
	return false
}

// publicError gives an error of the runtime the processor's prefix on
// every line and makes it match the public error of its kind.
func publicError(err error) error {
	if err == nil {
		return nil
	}
	pe := &prefixed{prefix: "processor: ", err: err}
	for _, k := range kinds {
		if errors.Is(err, k.internal) {
			pe.kind = k.public
			break
		}
	}
	return pe
}

// prefixed is an error whose every line starts with prefix.
type prefixed struct {
	prefix string
	err    error
	kind   error // the public error it matches, or nil
}

func (e *prefixed) Error() string { return prefixLines(e.prefix, e.err.Error()) }

func (e *prefixed) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.kind, e.err}
}

// prefixLines puts prefix before every line of msg that lacks it.
func prefixLines(prefix, msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
