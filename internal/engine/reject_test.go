package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

type order struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

// Records that cannot be decoded, and records whose processing fails, go
// to the rejected topic in the same transaction with their reason and
// source; a failing record leaves no partial output; the rest flows on.
func TestRejectedRecordsAreVisible(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	tp := topology.New("orders")
	src := topology.Source(tp, in, serde.String(), serde.JSON[order]())
	split := topology.FlatMap(src, func(k string, o order) ([]topology.KeyValue[string, int64], error) {
		// Two outputs per order, then a failure for negative amounts: the
		// first output must not survive the failure.
		kvs := []topology.KeyValue[string, int64]{{Key: o.ID, Value: o.Amount}}
		if o.Amount < 0 {
			return nil, errors.New("negative amount")
		}
		return append(kvs, topology.KeyValue[string, int64]{Key: o.ID + "-copy", Value: o.Amount}), nil
	})
	topology.To(split, out, serde.String(), serde.Int64())

	env.ProduceRaw(in, []byte("k1"), []byte(`{"id":"a","amount":5}`))
	env.ProduceRaw(in, []byte("k2"), []byte(`not json`))
	env.ProduceRaw(in, []byte("k3"), []byte(`{"id":"b","amount":-1}`))
	env.ProduceRaw(in, []byte("k4"), nil)
	env.ProduceRaw(in, []byte("k5"), []byte(`{"id":"c","amount":7}`))

	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	env.WaitCount(out, 4, 60*time.Second)
	env.WaitCount(app+"-rejected", 3, 60*time.Second)
	r.Stop()

	if got := len(env.Read(out)); got != 4 {
		t.Errorf("output has %d records, want 4", got)
	}
	reasons := map[string]int{}
	for _, rec := range env.Read(app + "-rejected") {
		reason := rec.Headers[wire.HeaderRejectReason]
		reasons[reason]++
		src := rec.Headers[wire.HeaderSource]
		if !strings.HasPrefix(src, in+"/") {
			t.Errorf("rejected record source %q does not name the input", src)
		}
		if rec.Headers[wire.HeaderRejectError] == "" {
			t.Errorf("rejected record without an error message")
		}
	}
	want := map[string]int{wire.ReasonUndecodable: 2, wire.ReasonProcessingError: 1}
	for k, v := range want {
		if reasons[k] != v {
			t.Errorf("rejections %v, want %v", reasons, want)
			break
		}
	}
	if s := r.E.Stats(); s.Rejected != 3 || s.RecordsIn != 5 {
		t.Errorf("stats %+v", s)
	}
}
