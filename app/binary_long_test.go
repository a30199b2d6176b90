//go:build long

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// stopBound is the processor's stop bound with the default timeouts (see
// processor.Processor.Run): a replica told to stop returns within it.
const stopBound = 19 * time.Second

// The quickstart's binary, built as a team builds theirs (go build of a
// main package that uses only the public API, its main the kit's), runs a
// replica until SIGTERM and stops within the stop bound with its summary,
// serves its health and status page, describes its topology, and verifies
// its output: every big order out once, the small ones filtered (no
// outcome, which the topology allows), a planted duplicate caught.
func TestQuickstartBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "quickstart")
	build := exec.Command("go", "build", "-o", bin, "github.com/onceflow/onceflow/examples/quickstart")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := strings.Join(b.Addrs(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, -1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	big := 0
	for i := range 300 {
		amount := 10 * (i % 200) // 0..1990: a half of 1,000 or more
		if amount >= 1000 {
			big++
		}
		rs = append(rs, &kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "o-%d", i),
			Value: fmt.Appendf(nil, `{"id":"o-%d","customer":"C%d","amount":%d}`, i, i%13, amount)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// run, until SIGTERM.
	var stderr syncBuffer
	run := exec.CommandContext(ctx, bin, "run", "--brokers", brokers, "--instance-id", "r1",
		"--state-dir", t.TempDir(), "--metrics-addr", "127.0.0.1:0", "--log-level", "info", "--log-format", "json")
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	for {
		out, err := verify.ReadAll(ctx, b.Addrs(), "big-orders")
		if err == nil && len(out) == big {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("run exited: %v\n%s", err, stderr.String())
		case <-ctx.Done():
			t.Fatalf("%d big orders not all out: %v\n%s", big, err, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	addr := regexp.MustCompile(`"addr":"([^"]+)"`).FindStringSubmatch(stderr.String())
	if addr == nil {
		t.Fatalf("no served address in the log:\n%s", stderr.String())
	}
	for path, want := range map[string]string{"/healthz": "ok", "/": "<html", "/metrics": "onceflow_"} {
		body := get(t, "http://"+addr[1]+path)
		if !strings.Contains(body, want) {
			t.Errorf("GET %s: %q does not contain %q", path, trim(body), want)
		}
	}
	start := time.Now()
	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		took := time.Since(start)
		t.Logf("stopped %v after SIGTERM", took.Round(time.Millisecond))
		if err != nil {
			t.Fatalf("run after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(stopBound + 5*time.Second):
		t.Fatalf("run did not stop within %v of SIGTERM:\n%s", stopBound, stderr.String())
	}
	// JSON logs: the closing summary is a JSON line too.
	if want := fmt.Sprintf(`"@message":"r1 stopped: 300 in, %d out`, big); !strings.Contains(stderr.String(), want) {
		t.Errorf("no closing summary %q:\n%s", want, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"@message":"replica stopping"`) {
		t.Errorf("no json log line of the stop:\n%s", stderr.String())
	}

	// describe, as text and Mermaid.
	code, stdout, errs := runBin(ctx, bin, "describe")
	if code != 0 || !strings.Contains(stdout, "orders") || !strings.Contains(stdout, "big-orders") {
		t.Errorf("describe: exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	code, stdout, _ = runBin(ctx, bin, "describe", "--format", "mermaid")
	if code != 0 || !strings.HasPrefix(stdout, "flowchart") {
		t.Errorf("describe --format mermaid: exit %d, stdout %q", code, stdout)
	}

	// verify: every big order has its output, the small ones none.
	code, stdout, errs = runBin(ctx, bin, "verify", "--brokers", brokers, "--json")
	var rep verify.OutcomeReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 {
		t.Fatalf("verify: exit %d, stdout %q, stderr %q, %v", code, stdout, errs, err)
	}
	if !rep.OK || rep.Input != 300 || rep.WithOutput != big || rep.NoOutcome != 300-big || rep.Missing != 0 || rep.Doubled != 0 {
		t.Fatalf("verify: %s", rep)
	}
	if code, stdout, _ = runBin(ctx, bin, "verify", "--brokers", brokers); code != 0 {
		t.Errorf("verify (text): exit %d, stdout %q", code, stdout)
	}
	t.Logf("quickstart verify:\n%s", stdout)

	// A planted duplicate: verify fails (exit 1) and counts it.
	outs, err := verify.ReadAll(ctx, b.Addrs(), "big-orders")
	if err != nil {
		t.Fatal(err)
	}
	dup := outs[0]
	var hs []kgo.RecordHeader
	for k, v := range dup.Headers {
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "big-orders", Key: dup.Key, Value: dup.Value, Headers: hs}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runBin(ctx, bin, "verify", "--brokers", brokers)
	if code != 1 || !strings.Contains(stdout, "doubled 1") || !strings.Contains(stdout, "FAILED") {
		t.Fatalf("verify with a duplicate: exit %d, stdout %q", code, stdout)
	}
}

func runBin(ctx context.Context, bin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "ONCEFLOW_BROKERS=")
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		return -1, out.String(), errb.String() + err.Error()
	}
	return code, out.String(), errb.String()
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
