package main

import (
	"context"
	"fmt"
	"strings"
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

// TestSinksAndDLQCommands reads a ledger and a dead-letter topic written
// as the sink runner writes them, through sinks status, sinks unknown
// list, dlq list and dlq show.
func TestSinksAndDLQCommands(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"shop-sink-hook", "shop-sink-hook-ledger-changelog", "shop-sink-hook-dlq"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(key string, s sinkrunner.State) *kgo.Record {
		return &kgo.Record{Topic: "shop-sink-hook-ledger-changelog", Key: []byte(key),
			Value: sinkrunner.EncodeEntry(sinkrunner.Entry{State: s, Attempts: 1, LastError: "no answer", Source: "shop-orders/0/7"})}
	}
	recs := []*kgo.Record{
		entry("hook:a", sinkrunner.Succeeded), entry("hook:b", sinkrunner.Succeeded), entry("hook:c", sinkrunner.Unknown),
		entry("hook:d", sinkrunner.DeadLettered),
		{Topic: "shop-sink-hook-ledger-changelog", Key: []byte("hook:e"),
			Value: sinkrunner.EncodeEntry(sinkrunner.Entry{State: sinkrunner.Unknown, Attempts: 1, RecordKey: []byte("c-5"), Payload: []byte(`{"order":"o-5"}`)})},
		{Topic: "shop-sink-hook-dlq", Value: []byte(`{"order":"o-4"}`), Headers: []kgo.RecordHeader{
			{Key: sinks.HeaderIdempotencyKey, Value: []byte("hook:d")}, {Key: wire.HeaderSinkError, Value: []byte("status 400")},
			{Key: wire.HeaderSinkAttempts, Value: []byte("1")}, {Key: wire.HeaderSinkClass, Value: []byte("permanent")}}},
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	brokers := strings.Join(b.Addrs(), ",")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"sinks", "status"}, []string{"SINK  UNREAD  DELIVERIES  PENDING  SUCCEEDED  FAILED  DEAD-LETTERED  UNKNOWN  IN-FLIGHT", "hook  0       5           0        2          0       1              2        0"}},
		{[]string{"sinks", "status", "--json"}, []string{`"sink":"hook"`, `"succeeded":2`, `"unknown":2`}},
		{[]string{"sinks", "unknown", "list", "--sink", "hook"}, []string{"hook:c", "shop-orders/0/7", "no answer", "2 unknown"}},
		{[]string{"dlq", "list", "--sink", "hook"}, []string{"0/0", "hook:d", "permanent", "status 400", "1 dead letters", "STATE"}},
		{[]string{"dlq", "show", "--sink", "hook", "--key", "hook:d"}, []string{"idempotency key  hook:d", `payload          {"order":"o-4"}`}},
		{[]string{"dlq", "show", "--sink", "hook", "--at", "0/0", "--json"}, []string{`"idempotency_key":"hook:d"`}},
		{[]string{"dlq", "redrive", "--sink", "hook", "hook:d"}, []string{"redrive of hook:d written to shop-sink-hook/0 at offset 0"}},
		{[]string{"sinks", "unknown", "resolve", "--sink", "hook", "hook:e", "--as", "retry", "--json"}, []string{`"command":"resolve"`, `"as":"retry"`, `"offset":1`}},
	} {
		code, out, errOut := cli(t, ctx, append(tc.args, "--brokers", brokers, "--app-id", "shop")...)
		if code != exitOK {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: stdout\n%s\ndoes not contain %q", tc.args, out, w)
			}
		}
	}
	if code, _, errOut := cli(t, ctx, "dlq", "show", "--brokers", brokers, "--app-id", "shop", "--sink", "hook", "--key", "nope"); code != exitError || !strings.Contains(errOut, "no dead letter") {
		t.Errorf("dlq show of a missing key: exit %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{
		{"sinks", "unknown", "resolve", "--sink", "hook", "hook:a", "--as", "retry"},
		{"sinks", "unknown", "resolve", "--sink", "hook", "hook:c", "--as", "retry"}, // parked without its payload
		{"dlq", "redrive", "--sink", "hook", "hook:a"},
	} {
		if code, _, errOut := cli(t, ctx, append(args, "--brokers", brokers, "--app-id", "shop")...); code != exitError || !strings.Contains(errOut, "not in a state") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// The commands are in the outbox, with the deliveries' payloads.
	outbox, err := verify.ReadAll(ctx, b.Addrs(), "shop-sink-hook")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range outbox {
		got = append(got, fmt.Sprintf("%s %s %s %s %s", r.Headers[wire.HeaderSinkCommand], r.Headers[wire.HeaderSinkResolveAs],
			r.Headers[sinks.HeaderIdempotencyKey], r.Key, r.Value))
	}
	if want := `redrive  hook:d  {"order":"o-4"}|resolve retry hook:e c-5 {"order":"o-5"}`; strings.Join(got, "|") != want {
		t.Errorf("outbox:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
}

// TestBatchCommands resolves and redrives many deliveries with one
// command each (sinks unknown resolve --all, dlq redrive --all, and keys
// given together): every command lands in its delivery's outbox
// partition, and a batch with one key refused writes nothing.
func TestBatchCommands(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"shop-sink-hook", "shop-sink-hook-ledger-changelog", "shop-sink-hook-dlq"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(key string, p int32, s sinkrunner.State, payload string) *kgo.Record {
		e := sinkrunner.Entry{State: s, Attempts: 1}
		if s == sinkrunner.Unknown {
			e.RecordKey, e.Payload = []byte("c-"+key), []byte(payload)
		}
		return &kgo.Record{Topic: "shop-sink-hook-ledger-changelog", Partition: p, Key: []byte(key), Value: sinkrunner.EncodeEntry(e)}
	}
	dead := func(key string, p int32, payload string) *kgo.Record {
		return &kgo.Record{Topic: "shop-sink-hook-dlq", Partition: p, Key: []byte("c-" + key), Value: []byte(payload),
			Headers: []kgo.RecordHeader{{Key: sinks.HeaderIdempotencyKey, Value: []byte(key)}, {Key: wire.HeaderSinkClass, Value: []byte("permanent")}}}
	}
	recs := []*kgo.Record{
		entry("hook:u1", 0, sinkrunner.Unknown, "p-u1"), entry("hook:u2", 1, sinkrunner.Unknown, "p-u2"), entry("hook:u3", 1, sinkrunner.Unknown, "p-u3"),
		entry("hook:d1", 0, sinkrunner.DeadLettered, ""), entry("hook:d2", 1, sinkrunner.DeadLettered, ""), entry("hook:s", 0, sinkrunner.Succeeded, ""),
		entry("hook:r", 1, sinkrunner.Succeeded, ""), // dead-lettered once, redriven since: its dead letter stays
		dead("hook:d1", 0, "p-d1"), dead("hook:r", 1, "p-r"), dead("hook:d2", 1, "p-d2"),
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	brokers := strings.Join(b.Addrs(), ",")
	run := func(args ...string) (int, string, string) {
		return cli(t, ctx, append(args, "--brokers", brokers, "--app-id", "shop")...)
	}
	for _, args := range [][]string{
		{"sinks", "unknown", "resolve", "--sink", "hook", "hook:u1", "hook:s", "--as", "retry"}, // hook:s settled
		{"dlq", "redrive", "--sink", "hook", "hook:d1", "hook:r"},                               // hook:r redriven before
		{"dlq", "redrive", "--sink", "hook", "hook:d1", "hook:nope"},
		{"sinks", "unknown", "resolve", "--sink", "hook", "--as", "retry"},
		{"dlq", "redrive", "--sink", "hook", "--all", "hook:d1"},
	} {
		if code, out, errOut := run(args...); code != exitError || strings.Contains(out, "written to") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want refused, nothing written", args, code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"sinks", "unknown", "resolve", "--sink", "hook", "--all", "--as", "retry"},
			[]string{"resolve as retry of hook:u1 written to shop-sink-hook/0", "of hook:u3 written to shop-sink-hook/1", "3 commands written"}},
		{[]string{"dlq", "redrive", "--sink", "hook", "--all"}, []string{"redrive of hook:d1 written to shop-sink-hook/0", "redrive of hook:d2 written to shop-sink-hook/1", "2 commands written"}},
		{[]string{"dlq", "redrive", "--sink", "hook", "hook:d2", "hook:d1", "hook:d2", "--json"}, []string{`"idempotency_key":"hook:d2"`, `"idempotency_key":"hook:d1"`}},
	} {
		code, out, errOut := run(tc.args...)
		if code != exitOK {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: stdout\n%s\ndoes not contain %q", tc.args, out, w)
			}
		}
	}
	outbox, err := verify.ReadAll(ctx, b.Addrs(), "shop-sink-hook")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range outbox {
		got = append(got, fmt.Sprintf("%d %s%s %s %s %s", r.Partition, r.Headers[wire.HeaderSinkCommand], r.Headers[wire.HeaderSinkResolveAs],
			r.Headers[sinks.HeaderIdempotencyKey], r.Key, r.Value))
	}
	want := "0 resolveretry hook:u1 c-hook:u1 p-u1|0 redrive hook:d1 c-hook:d1 p-d1|0 redrive hook:d1 c-hook:d1 p-d1|" +
		"1 resolveretry hook:u2 c-hook:u2 p-u2|1 resolveretry hook:u3 c-hook:u3 p-u3|1 redrive hook:d2 c-hook:d2 p-d2|1 redrive hook:d2 c-hook:d2 p-d2"
	if strings.Join(got, "|") != want {
		t.Errorf("outbox:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
}
