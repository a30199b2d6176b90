package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// Duplicates of one event arrive under different keys, on different
// partitions. Repartitioning by event id brings them to one task, where
// the dedup gate catches every one; lineage still names the original input.
func TestRepartitionByEventIDCatchesCrossPartitionDuplicates(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 4)

	tp := topology.New("dedup-anywhere")
	src := topology.Source(tp, in, serde.String(), serde.String())
	byID := topology.Process(src, "key-by-event-id", func(ctx topology.Context[string, string], r topology.Record[string, string]) error {
		id, _ := r.Headers.Get("event-id")
		r.Key = string(id)
		return ctx.Forward(r)
	})
	moved := topology.Repartition(byID, "by-event-id", serde.String(), serde.String())
	fresh := topology.Dedup(moved, "dedup-1", topology.EventIDHeader("event-id"), time.Hour)
	topology.To(fresh, out, serde.String(), serde.String())

	const events = 300
	var rs []*kgo.Record
	for i := range events {
		id := fmt.Appendf(nil, "e-%d", i)
		v := fmt.Appendf(nil, "payload-%d", i)
		rs = append(rs,
			&kgo.Record{Topic: in, Key: fmt.Appendf(nil, "a-%d", i), Value: v, Headers: []kgo.RecordHeader{{Key: "event-id", Value: id}}},
			&kgo.Record{Topic: in, Key: fmt.Appendf(nil, "b-%d", i), Value: v, Headers: []kgo.RecordHeader{{Key: "event-id", Value: id}}})
	}
	env.ProduceRecords(rs...)
	crossing := 0
	for i := 0; i < len(rs); i += 2 {
		if rs[i].Partition != rs[i+1].Partition {
			crossing++
		}
	}
	if crossing == 0 {
		t.Fatal("no duplicate pair crosses partitions: the test would test nothing")
	}

	r := env.Start(env.Config(app, "r1"), compile(t, tp))
	env.WaitCount(out, events, 60*time.Second)
	env.WaitCount(app+"-rejected", events, 60*time.Second)
	r.Stop()

	rejected := env.Read(app + "-rejected")
	for _, rec := range rejected {
		if reason := rec.Headers[wire.HeaderRejectReason]; reason != "duplicate" {
			t.Errorf("rejected with reason %q, want duplicate", reason)
		}
	}
	if n := len(env.Read(out)); n != events {
		t.Errorf("%d outputs, want %d", n, events)
	}
	if n := len(env.Read(app + "-by-event-id-repartition")); n != 2*events {
		t.Errorf("repartition topic holds %d records, want %d", n, 2*events)
	}
	env.VerifySources(in, out, app+"-rejected")
	t.Logf("%d of %d duplicate pairs crossed partitions; all caught", crossing, events)
}
