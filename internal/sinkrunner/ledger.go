package sinkrunner

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/sinks"
)

// State is where a delivery stands in the ledger.
type State string

const (
	// Pending: not settled yet (never tried, waiting to retry, or an
	// attempt out).
	Pending State = "pending"
	// Succeeded: the sink applied it. Never sent again.
	Succeeded State = "succeeded"
	// Failed: permanently failed or out of retries, on its way to the
	// dead-letter topic.
	Failed State = "failed"
	// DeadLettered: in the dead-letter topic. Never sent again unless
	// redriven.
	DeadLettered State = "dead-lettered"
	// Unknown: an attempt to a sink that is not idempotent went out and
	// its outcome is unknown. Parked: never re-sent automatically.
	Unknown State = "unknown"
)

// States lists every state, in order.
var States = []State{Pending, Succeeded, Failed, DeadLettered, Unknown}

// Entry is one delivery's ledger record, keyed by its idempotency key.
type Entry struct {
	State    State `json:"state"`
	Attempts int   `json:"attempts"`
	// InFlight: an attempt went out and its outcome was not recorded
	// (written before each attempt to a sink that is not idempotent, so a
	// runner that dies mid-attempt leaves it behind).
	InFlight  bool      `json:"in_flight,omitempty"`
	LastError string    `json:"last_error,omitempty"`
	Class     string    `json:"class,omitempty"`
	Source    string    `json:"source,omitempty"`
	First     time.Time `json:"first"`
	Updated   time.Time `json:"updated"`
	// Command is one past the outbox offset of the last command (redrive,
	// resolve) applied to the delivery: a command at a lower offset,
	// read again after a restart or a move, was applied already.
	Command int64 `json:"command,omitempty"`
	// CommandOutbox is the topic id of the outbox Command counts in: a
	// command read from an outbox recreated since (another id, offsets
	// started again) is compared with none of its offsets.
	CommandOutbox string `json:"command_outbox,omitempty"`
	// RecordKey and Payload are the outbox record of a delivery parked as
	// unknown, kept so that resolving it as retry can send it again after
	// the outbox record is gone.
	RecordKey []byte `json:"record_key,omitempty"`
	Payload   []byte `json:"payload,omitempty"`
	// PayloadHash is the hex SHA-256 of the delivery's payload: the same
	// key read again with another payload is a conflict, not a replay.
	PayloadHash string `json:"payload_sha256,omitempty"`
	// Requested is the timestamp of the outbox record that created the
	// entry: with a default idempotency key (the consumed record's
	// coordinates), the same key read again with another request time is
	// another request whose input offsets started again, not a replay.
	Requested time.Time `json:"requested,omitzero"`
	// Undecodable is the ledger value this entry replaced, kept as it was
	// when the runner could not decode it (see ClassUndecodable).
	Undecodable []byte `json:"undecodable,omitempty"`
	// Fence is the fence generation of the runner that wrote the entry
	// (see ledgers.fence): a restore skips an entry whose fence is below
	// a fence record read before it, written by an owner that had lost
	// the partition. Zero: written before entries carried it, applied.
	Fence int64 `json:"fence,omitempty"`
}

// Action is what the runner does next with a delivery.
type Action int

const (
	// Deliver: make an attempt.
	Deliver Action = iota
	// Retry: wait for the backoff, then make an attempt.
	Retry
	// DeadLetter: write it to the dead-letter topic, then mark it so.
	DeadLetter
	// Park: record it as unknown and leave it.
	Park
	// Skip: already settled.
	Skip
)

func (a Action) String() string {
	return [...]string{"deliver", "retry", "dead-letter", "park", "skip"}[a]
}

// ErrUndecodable is returned (wrapped) for a ledger value this release
// cannot read: corrupt, or written by a newer release. Not retryable.
var ErrUndecodable = errors.New("sinkrunner: ledger entry does not decode")

// ErrTransition is an event the entry's state does not allow.
var ErrTransition = errors.New("sinkrunner: transition not allowed")

// Settled reports whether the delivery needs nothing more from the runner.
func (e Entry) Settled() bool {
	return e.State == Succeeded || e.State == DeadLettered || e.State == Unknown
}

// Resume says what to do with a delivery read from the outbox, given its
// ledger entry (zero when it has none). An attempt left in flight by a
// runner that stopped is an unknown outcome: parked for a sink that is
// not idempotent, re-sent under the same key to one that is.
func (e Entry) Resume(idempotent bool, at time.Time) (Entry, Action) {
	switch e.State {
	case "", Pending:
		if e.InFlight && !idempotent {
			e.State, e.InFlight, e.Updated = Unknown, false, at
			e.Class = sinks.Unknown.String()
			e.LastError = "the runner stopped while an attempt was out"
			return e, Park
		}
		return e, Deliver
	case Failed:
		return e, DeadLetter
	}
	return e, Skip
}

// Start records an attempt going out.
func (e Entry) Start(source string, at time.Time) (Entry, error) {
	if e.State != "" && e.State != Pending {
		return e, fmt.Errorf("%w: start in state %s", ErrTransition, e.State)
	}
	if e.State == "" {
		e.State, e.First, e.Source = Pending, at, source
	}
	e.Attempts++
	e.InFlight, e.Updated = true, at
	return e, nil
}

// Succeed records the attempt out as applied.
func (e Entry) Succeed(at time.Time) (Entry, error) {
	if e.State != Pending || !e.InFlight {
		return e, fmt.Errorf("%w: success in state %s without an attempt out", ErrTransition, e.State)
	}
	e.State, e.InFlight, e.Updated, e.LastError, e.Class = Succeeded, false, at, "", ""
	return e, nil
}

// Fail records the attempt out as failed with err of class c and says
// what follows: a retry, unless the class is permanent, or the outcome is
// unknown to a sink that is not idempotent (parked), or exhausted says
// the retry budget is spent (dead-lettered).
func (e Entry) Fail(c sinks.Class, err string, idempotent, exhausted bool, at time.Time) (Entry, Action, error) {
	if e.State != Pending || !e.InFlight {
		return e, Skip, fmt.Errorf("%w: failure in state %s without an attempt out", ErrTransition, e.State)
	}
	e.InFlight, e.Updated, e.LastError, e.Class = false, at, err, c.String()
	switch {
	case c == sinks.Unknown && !idempotent:
		e.State = Unknown
		return e, Park, nil
	case c == sinks.Permanent, exhausted:
		e.State = Failed
		return e, DeadLetter, nil
	}
	return e, Retry, nil
}

// DeadLettered records the delivery written to the dead-letter topic.
func (e Entry) DeadLettered(at time.Time) (Entry, error) {
	if e.State != Failed {
		return e, fmt.Errorf("%w: dead-lettered in state %s", ErrTransition, e.State)
	}
	e.State, e.Updated = DeadLettered, at
	return e, nil
}

// Resolve settles a parked (unknown) delivery by hand: as succeeded, as
// failed (it goes to the dead-letter topic), or as pending (it is sent
// again, under the same key, when its outbox record is read again).
func (e Entry) Resolve(to State, at time.Time) (Entry, error) {
	if e.State != Unknown {
		return e, fmt.Errorf("%w: resolve in state %s", ErrTransition, e.State)
	}
	switch to {
	case Succeeded, Failed, Pending:
	default:
		return e, fmt.Errorf("%w: resolve to %s", ErrTransition, to)
	}
	e.State, e.InFlight, e.Updated = to, false, at
	return e, nil
}

// Redrive makes a dead-lettered delivery pending again, with a fresh
// retry budget (Attempts counts from the redrive).
func (e Entry) Redrive(at time.Time) (Entry, error) {
	if e.State != DeadLettered {
		return e, fmt.Errorf("%w: redrive in state %s", ErrTransition, e.State)
	}
	e.State, e.Attempts, e.InFlight, e.Updated = Pending, 0, false, at
	return e, nil
}

// EncodeEntry encodes an entry for the ledger and its changelog (JSON).
func EncodeEntry(e Entry) []byte {
	b, _ := json.Marshal(e) // a struct of plain fields always encodes
	return b
}

// DecodeEntry decodes a ledger value. A state it does not know is an
// error (ErrUndecodable), not an entry the runner would skip as settled.
func DecodeEntry(b []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	switch e.State {
	case "", Pending, Succeeded, Failed, DeadLettered, Unknown:
	default:
		return Entry{}, fmt.Errorf("%w: unknown state %q", ErrUndecodable, e.State)
	}
	return e, nil
}
