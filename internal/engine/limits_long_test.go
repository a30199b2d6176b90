//go:build long

// Slow fault, timeout and eviction tests: make test-long runs them, make test does not.

package engine_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
)

// A transaction commits once its input records reach 16 MiB, whatever the
// commit interval and record count say, so that a slow output never holds
// more than that of large records in the producer: 40 records of 900 KiB
// commit in at least 3 transactions (36 MiB), not one.
func TestTransactionsAreBoundedInBytes(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	bigInput(env, in, 1)
	var rs []*kgo.Record
	for i := range 40 {
		rs = append(rs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k-%d", i), Value: bytes.Repeat([]byte{byte('a' + i%26)}, 900<<10)})
	}
	env.ProduceLarge(rs...)
	cfg := env.Config(app, "r1")
	cfg.CommitInterval = 5 * time.Second // within the transaction timeout
	cfg.CommitRecords = 50_000
	r := env.Start(cfg, compile(t, copyex.Topology(in, out)))
	env.WaitCount(out, 40, 60*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	s := r.E.Stats()
	t.Logf("committed %d transactions for %d records", s.Committed, s.RecordsIn)
	if s.Committed < 3 || s.RecordsIn != 40 {
		t.Errorf("stats %+v: want 40 records in at least 3 transactions", s)
	}
}
