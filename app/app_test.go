package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/app"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// lengths writes each record's value length, keyed alike.
func lengths() *topology.Topology { return lengthsOf("lengths", "words", "word-lengths") }

func lengthsOf(name, input, output string) *topology.Topology {
	t := topology.New(name)
	in := topology.Source(t, input, serde.String(), serde.String())
	n := topology.MapValues(in, func(v string) (int64, error) { return int64(len(v)), nil })
	topology.To(n, output, serde.String(), serde.Int64())
	return t
}

// syncBuffer is a bytes.Buffer safe to write from a replica's goroutines
// while the test reads it.
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

func runApp(ctx context.Context, c app.Config, args ...string) (code int, stdout, stderr string) {
	var out, errb syncBuffer
	code = c.Run(ctx, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestDescribe(t *testing.T) {
	c := app.Config{Name: "team", Topologies: []*topology.Topology{lengths()}}
	code, stdout, stderr := runApp(context.Background(), c, "describe")
	if code != 0 || stdout != lengths().Describe() {
		t.Errorf("describe: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runApp(context.Background(), c, "describe", "lengths", "--format", "mermaid")
	if code != 0 || stdout != lengths().DescribeMermaid() {
		t.Errorf("describe --format mermaid: exit %d, stdout %q", code, stdout)
	}
}

// With several topologies a command names one; a wrong name lists them.
func TestPickTopology(t *testing.T) {
	other := topology.New("other")
	topology.To(topology.Source(other, "a", serde.String(), serde.String()), "b", serde.String(), serde.String())
	c := app.Config{Name: "team", Topologies: []*topology.Topology{lengths(), other}}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"describe", "other"}, 0, "other"},
		{[]string{"describe"}, 2, "team describe: name the topology: one of lengths, other"},
		{[]string{"describe", "nope"}, 2, `team describe: no topology "nope": one of lengths, other`},
		{[]string{"run", "nope", "-b", "127.0.0.1:1", "--instance-id", "r1"}, 2, `team run: no topology "nope"`},
		{[]string{"run", "lengths"}, 2, "--brokers"},
	} {
		code, stdout, stderr := runApp(context.Background(), c, tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// run processes until its context ends, then stops with a summary; verify
// then finds every input's outcome once, though no output equals its input.
func TestRunThenVerify(t *testing.T) {
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	runThenVerify(t, b.Addrs(), "")
}

// runThenVerify runs the lengths topology (its topics and application id
// prefixed by prefix) on brokers with the kit, then verifies it.
func runThenVerify(t *testing.T, addrs []string, prefix string) {
	brokers := strings.Join(addrs, ",")
	words, lens, name := prefix+"words", prefix+"word-lengths", prefix+"lengths"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(words))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, words); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for i := range 100 {
		rs = append(rs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: []byte(strings.Repeat("x", i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	c := app.Config{Name: "team", Topologies: []*topology.Topology{lengthsOf(name, words, lens)}}
	rctx, stop := context.WithCancel(ctx)
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- c.Run(rctx, []string{"run", "-b", brokers, "--instance-id", "r1", "--state-dir", t.TempDir(), "--commit-interval", "50ms"},
			strings.NewReader(""), &syncBuffer{}, &stderr)
	}()
	for {
		out, err := verify.ReadAll(ctx, addrs, lens)
		if err == nil && len(out) == 100 {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("run ended with %d: %s", code, stderr.String())
		case <-ctx.Done():
			t.Fatalf("no 100 outputs: %v; %s", err, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	if code := <-done; code != 0 || !strings.Contains(stderr.String(), "team: r1 stopped: 100 in, 100 out") {
		t.Fatalf("run: exit %d, stderr %q", code, stderr.String())
	}

	code, stdout, errs := runApp(ctx, c, "verify", "-b", brokers, "--json")
	var rep verify.OutcomeReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 {
		t.Fatalf("verify: exit %d, stdout %q, stderr %q, %v", code, stdout, errs, err)
	}
	if !rep.OK || rep.Input != 100 || rep.WithOutput != 100 || rep.Missing != 0 || rep.Doubled != 0 {
		t.Fatalf("verify: %s", rep)
	}
	code, stdout, _ = runApp(ctx, c, "verify", "-b", brokers)
	want := fmt.Sprintf("%s -> %s, rejected %s-rejected:\n  %s: 100 records\ninput 100, output 100", words, lens, name, lens)
	if code != 0 || !strings.HasPrefix(stdout, want) {
		t.Fatalf("verify: exit %d, stdout %q", code, stdout)
	}
}
