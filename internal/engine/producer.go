package engine

// The output producer: created with retries, closed in the background.

import (
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
)

// newProducer creates the output producer, retrying while the cluster
// does not answer; a refusal (kafka.ErrRefused: credentials, a missing
// transactional-id ACL) is returned at once. It returns nil, nil once ctx ends, at once even while a
// creation hangs on a coordinator that does not answer (that producer is
// closed when it arrives).
func (e *Engine) newProducer(ctx context.Context) (*kafka.Producer, error) {
	txnID := e.transactionalID()
	type result struct {
		p   *kafka.Producer
		err error
	}
	wait := 200 * time.Millisecond
	for {
		got := make(chan result, 1)
		go func() {
			p, err := kafka.NewProducer(e.cfg.Client, e.cfg.Timeouts, txnID, e.g.Stateful(), e.output.limit.producerMax())
			got <- result{p, err}
		}()
		var r result
		select {
		case r = <-got:
		case <-ctx.Done():
			e.life.closing.Add(1)
			go func() {
				defer e.life.closing.Done()
				if r := <-got; r.p != nil {
					r.p.Close()
				}
			}()
			return nil, nil
		}
		if r.err == nil {
			return r.p, nil
		}
		if kafka.IsRefused(r.err) {
			// No retry clears a missing ACL or a refused credential: say
			// what is missing at once instead of retrying in a loop.
			what := "producer"
			if txnID != "" {
				what = fmt.Sprintf("transactional producer %q (it needs WRITE on TransactionalId %q)", txnID, txnID)
			}
			return nil, fmt.Errorf("engine: %w", kafka.Refused(what, r.err))
		}
		e.log.Warn("cannot create producer; retrying", "transactional_id", txnID, "error", r.err, "backoff", wait)
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// closeProducer closes a dropped producer in the background: one abandoned
// by a call past its deadline may take a while to wind down, and the next
// producer (same transactional id) fences it anyway.
func (e *Engine) closeProducer(p *kafka.Producer) {
	e.life.closing.Add(1)
	go func() {
		defer e.life.closing.Done()
		if err := p.Close(); err != nil {
			e.log.Debug("close dropped producer", "error", err)
		}
	}()
}

// within runs step and waits for it at most d; a step still running then
// is left to finish in the background.
func within(d time.Duration, step func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		step()
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
