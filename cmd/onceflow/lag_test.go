package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

// `lag` on a topic written in transactions: a group committed at the
// marker after the last record has read everything (lag 0, and --wait
// succeeds at once); what an open transaction wrote is named, not lag.
func TestLagOnTransactionalTopic(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.TransactionalID("w"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "out"); err != nil {
		t.Fatal(err)
	}
	var last int64
	for range 2 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			r := &kgo.Record{Topic: "out", Value: []byte("v")}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			last = r.Offset
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "out", Partition: 0, At: last + 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	brokers := strings.Join(b.Addrs(), ",")
	lag := func(extra ...string) (int, string) {
		code, out, errOut := cli(t, ctx, append([]string{"lag", "-b", brokers, "-g", "g", "-t", "out"}, extra...)...)
		if errOut != "" {
			t.Logf("stderr: %s", errOut)
		}
		return code, out
	}
	if code, out := lag(); code != exitOK || out != "group g on out: committed 7 of 8, lag 0\n" {
		t.Errorf("all read: exit %d, %q", code, out)
	}
	if code, out := lag("--wait", "5s", "--json"); code != exitOK || !strings.Contains(out, `"lag":0`) || !strings.Contains(out, `"stable":8`) {
		t.Errorf("--wait: exit %d, %q", code, out)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code, out := lag(); code != exitOK || out != "group g on out: committed 7 of 8, lag 0 (1 offsets in open transactions)\n" {
		t.Errorf("an open transaction: exit %d, %q", code, out)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if code, out := lag(); code != exitOK || out != "group g on out: committed 7 of 10, lag 1\n" {
		t.Errorf("committed: exit %d, %q", code, out)
	}
}

// lag for a group that does not exist says so and exits 2 (it printed a
// lag of every record, exit 0); with --wait it waits, then says so, exit
// 2.
func TestLagForAMissingGroup(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code, _, stderr := cli(t, ctx, "produce", "-b", brokers, "-t", "in", "-n", "10", "--partitions", "1"); code != exitOK {
		t.Fatalf("produce: %s", stderr)
	}
	for _, extra := range [][]string{nil, {"--wait", "2s"}} {
		code, stdout, stderr := cli(t, ctx, append([]string{"lag", "-b", brokers, "-g", "nope", "-t", "in"}, extra...)...)
		if code != exitError || stdout != "" || !strings.Contains(stderr, `onceflow lag: no such group: "nope"`) {
			t.Errorf("lag %v for a missing group: exit %d, stdout %q, stderr %q", extra, code, stdout, stderr)
		}
	}
}
