package sinkadmin

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/sinks"
)

// A view refreshed after each of two waves of ledger and dead-letter
// records holds what whole reads of both topics give, reads each ledger
// record once, and writes its batch commands from what it holds.
func TestViewReadsOnlyWhatIsNew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers, cl := sinkTopics(t, ctx, "v")
	const outbox, ledger, dlq = "v-sink-hook", "v-sink-hook-ledger-changelog", "v-sink-hook-dlq"
	// wave writes an entry in state s for keys [from, to), a dead letter
	// for each dead-lettered one.
	wave := func(from, to int, s sinkrunner.State) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			key, p := fmt.Sprintf("hook:k%03d", i), int32(i%3)
			e := sinkrunner.Entry{State: s, Attempts: 1, First: t0, Updated: t0, RecordKey: fmt.Appendf(nil, "c%d", i), Payload: fmt.Appendf(nil, "p%d", i)}
			recs = append(recs, &kgo.Record{Topic: ledger, Partition: p, Key: []byte(key), Value: sinkrunner.EncodeEntry(e)})
			if s == sinkrunner.DeadLettered {
				recs = append(recs, &kgo.Record{Topic: dlq, Partition: p, Key: e.RecordKey, Value: e.Payload,
					Headers: []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: []byte(key)}}})
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	reads := &ledgerReads{topic: ledger}
	v := NewView(brokers, "v", "hook", kgo.WithHooks(reads))
	same := func(when string) {
		t.Helper()
		ds, bad, err := Ledger(ctx, brokers, "v", "hook")
		if err != nil {
			t.Fatal(err)
		}
		dls, err := DeadLetters(ctx, brokers, "v", "hook")
		if err != nil {
			t.Fatal(err)
		}
		vds, vbad := v.Deliveries()
		if !reflect.DeepEqual(vds, ds) || vbad != bad {
			t.Errorf("%s: the view holds %d deliveries (%d bad), a whole read %d (%d bad)", when, len(vds), vbad, len(ds), bad)
		}
		if vdls := v.DeadLetters(); !reflect.DeepEqual(vdls, dls) {
			t.Errorf("%s: the view holds dead letters %+v, a whole read %+v", when, vdls, dls)
		}
	}

	wave(0, 60, sinkrunner.Pending)
	wave(0, 20, sinkrunner.DeadLettered)
	if err := v.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	same("first wave")
	if got := reads.n.Load(); got != 80 {
		t.Errorf("first refresh read %d ledger records, want 80", got)
	}
	// The second wave settles some, parks some as unknown and
	// dead-letters one of the first dead-lettered keys again.
	reads.n.Store(0)
	wave(20, 40, sinkrunner.Succeeded)
	wave(40, 50, sinkrunner.Unknown)
	wave(5, 6, sinkrunner.DeadLettered)
	if err := v.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	same("second wave")
	if got := reads.n.Load(); got != 31 {
		t.Errorf("second refresh read %d ledger records, want the 31 new ones", got)
	}

	rs, err := v.ResolveAll(ctx, func(Delivery) string { return wire.SinkResolveRetry })
	if err != nil || len(rs) != 10 {
		t.Errorf("resolve all from the view: %d commands (%v), want 10", len(rs), err)
	}
	rd, err := v.RedriveAll(ctx, nil)
	if err != nil || len(rd) != 20 {
		t.Errorf("redrive all from the view: %d commands (%v), want 20", len(rd), err)
	}
	st, err := v.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.States[string(sinkrunner.Unknown)] != 10 || st.States[string(sinkrunner.DeadLettered)] != 20 || st.Deliveries != 60 {
		t.Errorf("status from the view: %+v, want 60 deliveries, 10 unknown, 20 dead-lettered", st)
	}
}
