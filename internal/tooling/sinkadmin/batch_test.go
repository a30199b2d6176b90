package sinkadmin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/sinkrunner"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/sinks"
)

// ledgerReads counts the records the clients it hooks fetched from one
// topic.
type ledgerReads struct {
	topic string
	n     atomic.Int64
}

func (l *ledgerReads) OnFetchBatchRead(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.FetchBatchMetrics) {
	if topic == l.topic {
		l.n.Add(int64(m.NumRecords))
	}
}

// A batch of commands reads the ledger once, however many deliveries it
// settles (a command per key read the whole ledger for each key: n keys,
// n reads), and writes a command per delivery, to its own outbox
// partition, with its payload. A batch with one delivery refused writes
// nothing.
func TestBatchReadsTheLedgerOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers, cl := sinkTopics(t, ctx, "bulk")
	const outbox, ledger, dlq = "bulk-sink-hook", "bulk-sink-hook-ledger-changelog", "bulk-sink-hook-dlq"
	// 200 deliveries: 60 parked as unknown, 20 dead-lettered, the rest
	// succeeded.
	var recs []*kgo.Record
	state := func(i int) sinkrunner.State {
		switch {
		case i < 60:
			return sinkrunner.Unknown
		case i < 80:
			return sinkrunner.DeadLettered
		}
		return sinkrunner.Succeeded
	}
	for i := range 200 {
		key, p := fmt.Sprintf("hook:k%03d", i), int32(i%3)
		e := sinkrunner.Entry{State: state(i), Attempts: 1, First: t0, Updated: t0}
		if e.State == sinkrunner.Unknown {
			e.RecordKey, e.Payload = fmt.Appendf(nil, "c%d", i), fmt.Appendf(nil, "p%d", i)
		}
		recs = append(recs, &kgo.Record{Topic: ledger, Partition: p, Key: []byte(key), Value: sinkrunner.EncodeEntry(e)})
		if e.State == sinkrunner.DeadLettered {
			recs = append(recs, &kgo.Record{Topic: dlq, Partition: p, Key: fmt.Appendf(nil, "c%d", i), Value: fmt.Appendf(nil, "p%d", i),
				Headers: []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: []byte(key)}}})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	reads := &ledgerReads{topic: ledger}
	hooked := kgo.WithHooks(reads)
	outboxLen := func() int {
		t.Helper()
		rs, err := verify.ReadAll(ctx, brokers, outbox)
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}

	// Refused whole: a settled key among parked ones, a key never seen.
	_, err := ResolveKeys(ctx, brokers, "bulk", "hook", []string{"hook:k001", "hook:k100", "hook:k002"}, wire.SinkResolveRetry, hooked)
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "hook:k100 is succeeded") {
		t.Errorf("resolve with a settled key: %v, want ErrState naming hook:k100", err)
	}
	_, err = RedriveKeys(ctx, brokers, "bulk", "hook", []string{"hook:k061", "hook:nope"}, hooked)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("redrive with an unknown key: %v, want ErrNotFound", err)
	}
	if n := outboxLen(); n != 0 {
		t.Fatalf("%d commands written by refused batches, want 0", n)
	}

	// Every unknown delivery but one, in one batch: one read of the
	// ledger, 59 commands.
	reads.n.Store(0)
	cs, err := ResolveAll(ctx, brokers, "bulk", "hook", func(d Delivery) string {
		if d.Key == "hook:k007" {
			return "" // left parked
		}
		return wire.SinkResolveRetry
	}, hooked)
	if err != nil {
		t.Fatal(err)
	}
	if got := reads.n.Load(); len(cs) != 59 || got != 200 {
		t.Errorf("resolve all: %d commands, %d ledger records read; want 59 and 200 (one read)", len(cs), got)
	}
	reads.n.Store(0)
	rd, err := RedriveAll(ctx, brokers, "bulk", "hook", nil, hooked)
	if err != nil {
		t.Fatal(err)
	}
	if got := reads.n.Load(); len(rd) != 20 || got != 200 {
		t.Errorf("redrive all: %d commands, %d ledger records read; want 20 and 200 (one read)", len(rd), got)
	}
	reads.n.Store(0)
	one, err := ResolveKeys(ctx, brokers, "bulk", "hook", []string{"hook:k007"}, wire.SinkResolveSucceeded, hooked)
	if err != nil {
		t.Fatal(err)
	}

	// Each command is in its delivery's partition, at the offset given,
	// with the delivery's record key and payload.
	out, err := verify.ReadAll(ctx, brokers, outbox)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]verify.Record{}
	for _, r := range out {
		at[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = r
	}
	if len(out) != 80 {
		t.Errorf("%d records in the outbox, want 80", len(out))
	}
	for _, c := range append(append(cs, rd...), one...) {
		var i int
		fmt.Sscanf(c.Key, "hook:k%d", &i)
		r, ok := at[fmt.Sprintf("%d/%d", c.Partition, c.Offset)]
		if !ok || c.Partition != int32(i%3) || r.Headers[sinks.HeaderIdempotencyKey] != c.Key || r.Headers[wire.HeaderSinkCommand] != c.Command ||
			r.Headers[wire.HeaderSinkResolveAs] != c.As || string(r.Value) != fmt.Sprintf("p%d", i) || string(r.Key) != fmt.Sprintf("c%d", i) {
			t.Errorf("command %+v: outbox record %+v", c, r)
		}
	}
}

// sinkTopics starts an embedded broker with the outbox, ledger and
// dead-letter topics of app's sink "hook" (3 partitions each) and returns
// its addresses and a client that writes to the partition a record names.
func sinkTopics(t *testing.T, ctx context.Context, app string) ([]string, *kgo.Client) {
	t.Helper()
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for _, topic := range []string{app + "-sink-hook", app + "-sink-hook-ledger-changelog", app + "-sink-hook-dlq"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	return b.Addrs(), cl
}
