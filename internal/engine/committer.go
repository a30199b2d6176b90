package engine

// The commit of the open transaction: the offsets join it and it commits
// (exactly once), or the outputs are flushed and the offsets committed (at
// least once), within one commit deadline, while the member's next join
// is held off.

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/internal/kafka"
)

// txnProducer is what a commit needs of the producer.
type txnProducer interface {
	Err() error
	AddOffsets(ctx context.Context, offsets map[string]map[int32]int64, g kafka.GroupMetadata) error
	Commit(ctx context.Context) error
	State() kafka.TxnState
	Flush(ctx context.Context) error
	CommitOffsets(ctx context.Context, offsets map[string]map[int32]int64, g kafka.GroupMetadata) error
}

// member is what a commit needs of the group session.
type member interface {
	Metadata() kafka.GroupMetadata
	Hold(ctx context.Context) (release func())
}

// committer commits a session's transactions; it keeps no state of its
// own.
type committer struct {
	hooks    Hooks
	timeouts kafka.Timeouts
	log      hclog.Logger
	m        *metrics
}

func (e *Engine) committer() committer {
	return committer{hooks: e.cfg.Hooks, timeouts: e.cfg.Timeouts, log: e.log, m: e.m}
}

// transaction adds offsets to the open transaction and commits it, within
// one commit deadline. A transaction that consumed nothing (no offsets)
// commits those proof returns instead. The member's next join is held off
// until release is called (after the commit's observers and apply); on
// failure, step names what failed.
func (c committer) transaction(p txnProducer, s member, offsets map[string]map[int32]int64,
	proof func(context.Context) (map[string]map[int32]int64, error)) (release func(), step string, err error) {
	release = func() {}
	if err := p.Err(); err != nil {
		c.m.commitFailures.add("produce", 1)
		return release, "produce", err
	}
	if h := c.hooks.BeforeAddOffsets; h != nil {
		h()
	}
	release = c.hold(s)
	// One deadline for the whole commit: a coordinator that does not
	// answer must not hold the replica (and its shutdown) for longer.
	ctx, cancel := context.WithTimeout(context.Background(), c.timeouts.Commit)
	defer cancel()
	// Every transaction proves the generation (fence.go): one opened by
	// a wall-clock punctuator, which consumed nothing, with its tasks'
	// positions unchanged.
	if len(offsets) == 0 {
		if offsets, err = proof(ctx); err != nil {
			return release, "positions", err
		}
	}
	if err := p.AddOffsets(ctx, offsets, s.Metadata()); err != nil {
		return release, "add offsets", err
	}
	if h := c.hooks.BeforeCommit; h != nil {
		h()
	}
	if err := c.commitTxn(ctx, p); err != nil {
		return release, "commit", err
	}
	return release, "", nil
}

// offsets ends an at-least-once interval: the outputs are flushed, then
// the offsets committed, within one commit deadline.
func (c committer) offsets(p txnProducer, s member, offsets map[string]map[int32]int64) (release func(), step string, err error) {
	release = func() {}
	if h := c.hooks.BeforeAddOffsets; h != nil {
		h()
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeouts.Commit)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		return release, "flush", err
	}
	hold := c.hold(s)
	err = p.CommitOffsets(ctx, offsets, s.Metadata())
	hold()
	if err != nil {
		return release, "commit offsets", err
	}
	return release, "", nil
}

// hold waits, before offsets join a transaction, while the member joins
// a new generation, at most half the commit timeout (so the transaction's
// age stays below its timeout), and holds the member's next join off until
// the release it returns is called (kafka.Session.Hold).
func (c committer) hold(s member) (release func()) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeouts.Commit/2)
	defer cancel()
	return s.Hold(ctx)
}

// errUnknownOutcome marks an EndTxn whose outcome could not be learned.
var errUnknownOutcome = errors.New("engine: transaction outcome unknown")

// commitTxn commits, retrying a call that failed without making the
// transaction abortable or the producer fatal (the outcome is unknown),
// until ctx ends.
func (c committer) commitTxn(ctx context.Context, p txnProducer) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = p.Commit(ctx); err == nil {
			return nil
		}
		if errors.Is(err, kafka.ErrCallTimeout) {
			return err
		}
		switch p.State() {
		case kafka.TxnAbortable, kafka.TxnFatal, kafka.TxnReady:
			return err
		}
		c.log.Warn("commit failed with unknown outcome; retrying", "attempt", attempt+1, "error", err)
	}
	return fmt.Errorf("%w: %v", errUnknownOutcome, err)
}
