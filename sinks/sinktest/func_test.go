package sinktest_test

import (
	"context"
	"sync"
	"testing"

	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/sinktest"
)

// idempotentFunc is a Go function sink that keeps idempotency keys.
type idempotentFunc struct{ sinks.Func }

func (idempotentFunc) Idempotent() bool { return true }

func TestFuncSink(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Harness {
		var mu sync.Mutex
		applied := map[string]int{}
		f := sinks.Func(func(ctx context.Context, d sinks.Delivery) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if applied[d.IdempotencyKey] == 0 {
				applied[d.IdempotencyKey]++
			}
			return nil
		})
		return sinktest.Harness{Sink: idempotentFunc{f}, Applied: func(key string) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return applied[key], nil
		}}
	})
}

// A Go function sink that is not idempotent checks the fence with a
// sinks.FenceGuard shared with its downstream.
func TestGuardedFuncSink(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Harness {
		var guard sinks.FenceGuard
		var mu sync.Mutex
		applied := map[string]int{}
		f := sinks.Func(func(ctx context.Context, d sinks.Delivery) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return guard.Apply(d, func() error {
				mu.Lock()
				defer mu.Unlock()
				applied[d.IdempotencyKey]++
				return nil
			})
		})
		return sinktest.Harness{Sink: f, ChecksFence: true, Applied: func(key string) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return applied[key], nil
		}}
	})
}
