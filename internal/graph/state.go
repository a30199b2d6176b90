package graph

import (
	"errors"
	"fmt"
	"time"
)

// StoreKind says how the runtime keeps a store.
type StoreKind int

const (
	// StoreKeyValue is a plain key-value store.
	StoreKeyValue StoreKind = iota
	// StoreDedup keeps event ids with their first-seen time, source and
	// payload hash, and expires them by event time.
	StoreDedup
	// StoreVersion keeps the last applied version per entity key.
	StoreVersion
	// StoreWindow keeps the windows of a windowed aggregation, their
	// indexes by close and expiry time, and the stage's stream time, in
	// the layout of topology's window stages (a key-value store to the
	// runtime).
	StoreWindow
)

// Store declares a state store a node uses.
type Store struct {
	Name      string
	Kind      StoreKind
	Retention time.Duration // dedup stores: how long an event id is remembered
}

// DedupResult is what a dedup store says about an event id.
type DedupResult int

const (
	// DedupNew: first time seen; now remembered.
	DedupNew DedupResult = iota
	// DedupDuplicate: seen before with the same payload.
	DedupDuplicate
	// DedupConflict: seen before with a different payload.
	DedupConflict
)

// State is the task-scoped state a node reads and writes inside the
// current transaction. The runtime implements it.
type State interface {
	Get(store string, key []byte) ([]byte, bool, error)
	Put(store string, key, value []byte) error
	Delete(store string, key []byte) error
	// Range calls fn for each key in [start, end) in order (nil bounds:
	// the whole store) until fn returns false.
	Range(store string, start, end []byte, fn func(key, value []byte) bool) error
	// Dedup checks and remembers an event id with the hash of its payload.
	Dedup(store string, eventID []byte, payloadHash [32]byte, eventTime time.Time) (DedupResult, error)
	// ObserveTime advances the task's stream time with a record's
	// timestamp t and returns t bounded by the wall clock plus the allowed
	// clock skew: the latest a record may move stream time to.
	ObserveTime(t time.Time) (time.Time, error)
}

// ErrNoState is returned by a node's state access when the runtime runs
// the graph without state (a topology with no stores).
var ErrNoState = errors.New("graph: no state available")

// Rejection is returned by a gate that rejects a record: the runtime
// writes the input record to the rejected-records topic with Reason.
type Rejection struct {
	Reason string
	Detail string
	Node   string // the gate; filled in by the graph when empty
	Err    error  // the failure rejected, if any (see Context.ForwardAlone)
	// Record is the record rejected when it is not the input record being
	// processed (see Context.ForwardAloneAs); nil: the input record.
	Record *RejectedRecord
}

// RejectedRecord is a record a node rejects in place of the input record
// being processed: one that record did not cause alone, such as the final
// result of a window its stream time closed, whose input records'
// effects commit without it.
type RejectedRecord struct {
	Key, Value []byte
	Headers    []Header
	Timestamp  time.Time
}

// Unwrap returns the failure rejected, if any.
func (r *Rejection) Unwrap() error { return r.Err }

// Reasoned is a failure that names its own rejection reason (a runtime's
// refusal of an output, say), for Context.ForwardAlone.
type Reasoned interface {
	error
	RejectReason() string
}

// IsUnavailable reports whether err, or an error it wraps, says that
// something the record's processing depends on is out of reach (a codec's
// schema registry, marked by an Unavailable method reporting true): a
// failure of the run, never the record's, so it is not turned into a
// rejection.
func IsUnavailable(err error) bool {
	u, ok := errors.AsType[interface {
		error
		Unavailable() bool
	}](err)
	return ok && u.Unavailable()
}

func (r *Rejection) Error() string {
	if r.Detail == "" {
		return "rejected: " + r.Reason
	}
	return fmt.Sprintf("rejected: %s: %s", r.Reason, r.Detail)
}
