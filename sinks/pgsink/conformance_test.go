package pgsink

import (
	"context"
	"testing"

	"github.com/onceflow/onceflow/sinks/sinktest"
)

// TestConformance runs the sink conformance suite on the PostgreSQL sink
// (real PostgreSQL; skipped without ONCEFLOW_PG_DSN).
func TestConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Harness {
		f := newFixture(t, nil)
		return sinktest.Harness{Sink: f.sink, ChecksFence: true, Applied: func(key string) (int, error) {
			var n int
			err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+f.rows+` WHERE key = $1`, key).Scan(&n)
			return n, err
		}}
	})
}
