package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func cli(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBrokerCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int)
	go func() { done <- run(ctx, []string{"broker", "--addr", addr}, &out, &errb) }()

	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "listening on "+addr) {
		if time.Now().After(deadline) {
			t.Fatalf("broker did not report its address; stdout %q stderr %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	if code, stdout, stderr := cli(t, pctx, "produce", "--brokers", addr, "--topic", "t", "--records", "10", "--no-progress"); code != 0 {
		t.Fatalf("produce: exit %d, %s %s", code, stdout, stderr)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("broker exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "broker stopped") {
		t.Errorf("stdout %q", out.String())
	}

	// The port is taken: a second broker fails with a clear error.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := cli(t, context.Background(), "broker", "--addr", addr)
	if code != exitError || !strings.Contains(stderr, "address already in use") {
		t.Fatalf("busy port: exit %d, stderr %q", code, stderr)
	}
}

func TestProduceAndVerify(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := strings.Join(b.Addrs(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	code, stdout, stderr := cli(t, ctx, "produce", "-b", brokers, "-t", "in", "-n", "500", "--partitions", "3", "--keys", "7")
	if code != 0 || !strings.Contains(stdout, "produced 500 records to in (3 partitions)") {
		t.Fatalf("produce: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if strings.Contains(stderr, "500/500") {
		t.Errorf("a progress bar on a stderr that is not a terminal: %q", stderr)
	}

	// The topic as its own output: no record has lineage.
	code, stdout, stderr = cli(t, ctx, "verify", "-b", brokers, "-i", "in", "-o", "in", "--json")
	var rep verify.OutcomeReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitFailed {
		t.Fatalf("verify in->in: exit %d, stdout %q, stderr %q, %v", code, stdout, stderr, err)
	}
	if rep.Input != 500 || rep.Output != 500 || rep.Missing != 500 || rep.Unexpected != 500 || rep.Doubled != 0 || rep.OK {
		t.Fatalf("report %+v, want 500 in, 500 out, 500 missing, 500 unexpected", rep)
	}

	// A faithful copy with lineage passes.
	copyWithLineage(t, ctx, b.Addrs(), "in", "out")
	code, stdout, stderr = cli(t, ctx, "verify", "-b", brokers, "-i", "in", "-o", "out")
	if code != exitOK || !strings.Contains(stdout, "input 500, output 500, rejections 0: with output 500, rejected only 0, missing 0, doubled 0, unexpected 0: ok") {
		t.Fatalf("verify in->out: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	code, _, stderr = cli(t, ctx, "verify", "-b", brokers, "-i", "in", "-o", "nope")
	if code != exitError || !strings.Contains(stderr, `verify: topic "nope" does not exist`) {
		t.Fatalf("missing topic: exit %d, stderr %q", code, stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"produce"},
		{"produce", "-b", "127.0.0.1:9092", "-t", "x", "-n", "0"},
		{"verify", "-b", "127.0.0.1:9092"},
		{"nonsense"},
	} {
		code, _, stderr := cli(t, context.Background(), args...)
		if code != exitError || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

func copyWithLineage(t *testing.T, ctx context.Context, brokers []string, from, to string) {
	t.Helper()
	recs, err := verify.ReadAll(ctx, brokers, from)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The embedded broker does not auto-create topics.
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, to); err != nil {
		t.Fatal(err)
	}
	var out []*kgo.Record
	for _, r := range recs {
		out = append(out, &kgo.Record{Topic: to, Key: r.Key, Value: r.Value, Headers: []kgo.RecordHeader{
			{Key: wire.HeaderSource, Value: []byte(wire.Source(r.Topic, r.Partition, r.Offset))},
		}})
	}
	if err := cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A broker that never answers a fetch makes verify wait; it gives up after
// --timeout with an error that says so instead of hanging.
func TestVerifyGivesUpAfterTimeout(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := strings.Join(b.Addrs(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code, stdout, stderr := cli(t, ctx, "produce", "-b", brokers, "-t", "in", "-n", "10"); code != 0 {
		t.Fatalf("produce: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// Every fetch is held until the test ends.
	release := make(chan struct{})
	c := b.Cluster()
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	defer close(release)
	start := time.Now()
	code, _, stderr := cli(t, ctx, "verify", "-b", brokers, "-i", "in", "-o", "in", "--timeout", "2s")
	took := time.Since(start)
	if code != exitError || !strings.Contains(stderr, "gave up after --timeout 2s") {
		t.Fatalf("verify: exit %d after %v, stderr %q; want an error naming the timeout", code, took, stderr)
	}
	if took > 10*time.Second {
		t.Errorf("verify took %v with --timeout 2s", took)
	}
	t.Logf("verify gave up after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(stderr))
}
