package verify_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// On a topic written in transactions, the lag is the records a
// read_committed consumer has yet to be given: the commit and abort
// markers and the aborted records are not lag, and neither is what an
// open transaction wrote. A group that read every record is committed
// at the last marker, one offset short of the end, and has a lag of 0.
func TestLagCountsRecordsNotMarkers(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.TransactionalID("w"), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, "out"); err != nil {
		t.Fatal(err)
	}
	// txn writes n records to partition p in one transaction, committed
	// or aborted, and returns the offset of its last record.
	txn := func(p int32, n int, commit bool) int64 {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var last int64
		for range n {
			r := &kgo.Record{Topic: "out", Partition: p, Value: []byte("v")}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			last = r.Offset
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		return last
	}
	commit := func(offsets map[int32]int64) {
		t.Helper()
		o := kadm.Offsets{}
		for p, at := range offsets {
			o.Add(kadm.Offset{Topic: "out", Partition: p, At: at, LeaderEpoch: -1})
		}
		if _, err := adm.CommitOffsets(ctx, "g", o); err != nil {
			t.Fatal(err)
		}
	}
	progress := func() verify.Progress {
		t.Helper()
		p, err := verify.GroupProgress(ctx, b.Addrs(), "g", "out")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Partition 0: 3 committed transactions of 4, one aborted of 5, one
	// committed of 2. Partition 1: 2 committed of 3.
	var ends0, ends1 []int64
	for range 3 {
		ends0 = append(ends0, txn(0, 4, true))
	}
	txn(0, 5, false)
	ends0 = append(ends0, txn(0, 2, true))
	for range 2 {
		ends1 = append(ends1, txn(1, 3, true))
	}

	// No offsets committed: everything committed is lag.
	if p := progress(); p.Lag != 3*4+2+2*3 || p.Estimated {
		t.Errorf("no commit: %+v, want lag %d", p, 3*4+2+2*3)
	}
	// Read everything: committed after each partition's last record, at
	// its marker.
	commit(map[int32]int64{0: ends0[3] + 1, 1: ends1[1] + 1})
	if p := progress(); p.Lag != 0 || p.Committed != p.Stable-2 {
		t.Errorf("all read: %+v, want lag 0, committed one marker short of each partition's end", p)
	}
	// Committed after the first transaction of each: 2 transactions of 4,
	// the aborted one (not lag), one of 2, and one of 3 left.
	commit(map[int32]int64{0: ends0[0] + 1, 1: ends1[0] + 1})
	if p := progress(); p.Lag != 2*4+2+3 {
		t.Errorf("first transactions read: %+v, want lag %d", p, 2*4+2+3)
	}
	// Committed in the middle of a transaction.
	commit(map[int32]int64{0: ends0[0] - 1, 1: ends1[1] + 1})
	if p := progress(); p.Lag != 2+2*4+2 {
		t.Errorf("mid-transaction: %+v, want lag %d", p, 2+2*4+2)
	}

	// An open transaction is not lag yet: nothing below the last stable
	// offset is unread.
	commit(map[int32]int64{0: ends0[3] + 1, 1: ends1[1] + 1})
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Partition: 1, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if p := progress(); p.Lag != 0 || p.End != p.Stable+1 {
		t.Errorf("an open transaction: %+v, want lag 0 and one offset past the last stable offset", p)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if p := progress(); p.Lag != 1 {
		t.Errorf("the transaction committed: %+v, want lag 1", p)
	}
}
