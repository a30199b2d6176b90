package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
)

func TestNamedFencingErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		fenced bool
		text   string // in the message when fenced
	}{
		{"producer fenced", sarama.ErrProducerFenced, true, "PRODUCER_FENCED, Kafka error code 90"},
		{"code 90 by number", sarama.KError(90), true, "PRODUCER_FENCED"},
		{"invalid epoch", sarama.ErrInvalidProducerEpoch, true, "INVALID_PRODUCER_EPOCH, Kafka error code 47"},
		{"wrapped", fmt.Errorf("txn: %w", sarama.KError(90)), true, "PRODUCER_FENCED"},
		{"abortable", sarama.ErrOutOfOrderSequenceNumber, false, ""},
		{"other", errors.New("boom"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := named(tc.err)
			if got := IsFenced(err); got != tc.fenced {
				t.Fatalf("IsFenced(%v) = %v, want %v", err, got, tc.fenced)
			}
			if got := errors.Is(err, ErrProducerFenced); got != tc.fenced {
				t.Fatalf("errors.Is(%v, ErrProducerFenced) = %v, want %v", err, got, tc.fenced)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("%v does not unwrap to its cause %v", err, tc.err)
			}
			if !tc.fenced {
				if err != tc.err {
					t.Fatalf("named changed an unrelated error: %v", err)
				}
				return
			}
			if msg := err.Error(); !strings.Contains(msg, tc.text) || strings.Contains(msg, "Unknown error") {
				t.Fatalf("message %q does not name the code (want %q)", msg, tc.text)
			}
			if named(err) != err {
				t.Fatal("named wrapped an already named error again")
			}
		})
	}
	if named(nil) != nil {
		t.Fatal("named(nil) != nil")
	}
}

// The broker answers a commit with PRODUCER_FENCED (error code 90): the
// producer reports a named fenced error and is fatal; a producer created
// again with the same transactional id aborts the fenced transaction, so
// a read_committed reader sees only what the new producer committed.
func TestCommitFencedByBroker(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("fenced"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "fenced"); err != nil {
		t.Fatal(err)
	}
	c := b.Cluster()
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = 90 // PRODUCER_FENCED, once
		return resp, nil, true
	})
	client := Client{Brokers: b.Addrs()}
	send := func(value string) error {
		p, err := NewProducer(client, Timeouts{}, "fenced-txn", false, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.Begin(); err != nil {
			t.Fatal(err)
		}
		p.Send(&Message{Topic: "fenced", Partition: 0, Value: []byte(value)})
		err = p.Commit(context.Background())
		if err != nil && p.State() != TxnFatal {
			t.Errorf("after %v the producer is %v, want fatal", err, p.State())
		}
		return err
	}
	err = send("fenced")
	if !IsFenced(err) || !errors.Is(err, ErrProducerFenced) || !strings.Contains(err.Error(), "PRODUCER_FENCED") {
		t.Fatalf("commit answered with error code 90 returned %v, want a named fenced error", err)
	}
	t.Logf("commit: %v", err)
	if err := send("kept"); err != nil {
		t.Fatalf("commit with a new producer: %v", err)
	}
	var got []string
	for len(got) < 1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v before the deadline", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 1 || got[0] != "kept" {
		t.Fatalf("read_committed: %v, want [kept]", got)
	}
}
