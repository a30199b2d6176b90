// Package sinktest is a conformance suite that every sinks.Sink passes,
// the built-in ones and a user's own.
package sinktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/sinks"
)

// Harness is what the suite needs of a sink under test.
type Harness struct {
	// Sink is the sink, ready to deliver.
	Sink sinks.Sink
	// Applied returns how many times the effect of a delivery with the
	// idempotency key was applied downstream.
	Applied func(key string) (int, error)
	// ChecksFence says the sink's downstream keeps the highest fence per
	// outbox partition and refuses a lower one (sinks.ErrFenced), as every
	// sink that is not idempotent must: the suite then checks it.
	ChecksFence bool
}

// Run runs the suite. newHarness gives a fresh sink for each case.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Run("DeliversOnce", func(t *testing.T) {
		h := newHarness(t)
		d := delivery("sinktest:once", 1)
		if err := h.Sink.Deliver(context.Background(), d); err != nil {
			t.Fatalf("deliver: %v", err)
		}
		expectApplied(t, h, d.IdempotencyKey, 1)
	})
	t.Run("IdempotentRedelivery", func(t *testing.T) {
		h := newHarness(t)
		idem, ok := h.Sink.(sinks.Idempotent)
		if !ok || !idem.Idempotent() {
			t.Skip("the sink does not claim to be idempotent")
		}
		d := delivery("sinktest:again", 1)
		for i := 1; i <= 3; i++ {
			d.Attempt = i
			if err := h.Sink.Deliver(context.Background(), d); err != nil {
				t.Fatalf("attempt %d: %v", i, err)
			}
		}
		expectApplied(t, h, d.IdempotencyKey, 1)
	})
	t.Run("RefusesLowerFence", func(t *testing.T) {
		h := newHarness(t)
		if !h.ChecksFence {
			t.Skip("the harness does not say the sink checks the fence")
		}
		owner, zombie := delivery("sinktest:owner", 1), delivery("sinktest:zombie", 1)
		owner.Fence = sinks.Fence{Generation: 10, Partition: 3}
		zombie.Fence = sinks.Fence{Generation: 9, Partition: 3}
		if err := h.Sink.Deliver(context.Background(), owner); err != nil {
			t.Fatalf("deliver with fence %s: %v", owner.Fence, err)
		}
		err := h.Sink.Deliver(context.Background(), zombie)
		if !errors.Is(err, sinks.ErrFenced) {
			t.Errorf("fence %s after %s: %v, want an error wrapping sinks.ErrFenced", zombie.Fence, owner.Fence, err)
		}
		expectApplied(t, h, owner.IdempotencyKey, 1)
		expectApplied(t, h, zombie.IdempotencyKey, 0)
	})
	t.Run("HonoursDeadline", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() { done <- h.Sink.Deliver(ctx, delivery("sinktest:cancelled", 1)) }()
		select {
		case err := <-done:
			if err != nil {
				if c, _ := sinks.Classify(err); c == sinks.Permanent && !errors.Is(err, context.Canceled) {
					t.Errorf("a cancelled attempt is permanent: %v", err)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Deliver ignored a cancelled context for 5 s")
		}
	})
	t.Run("ClassifiesErrors", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		err := h.Sink.Deliver(ctx, delivery("sinktest:deadline", 1))
		if err == nil {
			return
		}
		if c, _ := sinks.Classify(err); c != sinks.Transient && c != sinks.Unknown {
			t.Errorf("an attempt past its deadline is %s (%v): want transient or unknown", c, err)
		}
	})
}

func delivery(key string, attempt int) sinks.Delivery {
	return sinks.Delivery{Sink: "sinktest", IdempotencyKey: key, Payload: []byte(`{"n":1}`), Source: "in/0/0",
		Attempt: attempt, Fence: sinks.Fence{Generation: 1}, Requested: time.Now()}
}

func expectApplied(t *testing.T, h Harness, key string, want int) {
	t.Helper()
	got, err := h.Applied(key)
	if err != nil {
		t.Fatalf("applied: %v", err)
	}
	if got != want {
		t.Errorf("%s applied %d times, want %d", key, got, want)
	}
}
