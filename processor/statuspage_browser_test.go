//go:build browser

package processor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/processor"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the screenshot to docs/status-page.png")

// chromium finds Debian's headless browser: ONCEFLOW_CHROMIUM when set
// (make test-browser sets it after installing the browser; then a missing
// browser fails the test), else the first on PATH, or skips.
func chromium(t *testing.T) string {
	if p := os.Getenv("ONCEFLOW_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("ONCEFLOW_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// browse runs headless chromium on url with the given mode flags.
func browse(t *testing.T, bin, url string, mode ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir()}, mode...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", mode, err, stderr.String())
	}
	return out
}

// A browser shows the status page of a replica running the orders example:
// its three tasks running, its counters, and the duplicates it rejected.
// go test -tags browser ./processor -run TestStatusPageInBrowser
// [-update-screenshot] (writes docs/status-page.png).
func TestStatusPageInBrowser(t *testing.T) {
	bin := chromium(t)
	env := enginetest.New(t)
	in, out := env.Name("orders"), env.Name("totals")
	env.CreateTopic(in, 3)
	const events, dups = 60, 10
	var recs []*kgo.Record
	for i := range events + dups {
		n := i
		if i >= events {
			n = i - events // the same event again: a duplicate
		}
		e := orders.Event{EventID: fmt.Sprintf("e%d", n), OrderID: fmt.Sprintf("o%d", n), Customer: fmt.Sprintf("c%d", n%7), Amount: int64(10 + n), Version: 1}
		v, _ := json.Marshal(e)
		recs = append(recs, &kgo.Record{Topic: in, Key: []byte(e.Customer), Value: v, Headers: []kgo.RecordHeader{{Key: "event-id", Value: []byte(e.EventID)}}})
	}
	env.ProduceRecords(recs...)
	reg := prometheus.NewRegistry()
	p, err := processor.New(processor.Config{Brokers: env.Brokers, ApplicationID: env.Name("orders-app"), InstanceID: "orders-1",
		StateDir: t.TempDir(), Registerer: reg}, orders.Topology(in, out))
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, p, reg)
	env.WaitCount(p.RejectedTopic(), dups, 60*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for p.Status().Stats.RecordsIn < events+dups && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// The state is measured at the session's start and every 30 s: wait
	// for a measurement that sees the processed events.
	stored := func() bool {
		for _, s := range p.Status().State {
			if s.Store == "event-ids" && s.Bytes > 0 {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(45 * time.Second); !stored() && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}

	dom := string(browse(t, bin, srv.url+"/", "--dump-dom"))
	rows := regexp.MustCompile(`<td>0_(\d)</td><td>`+regexp.QuoteMeta(in)+`</td><td class="n">(\d)</td>\s*<td class="ok">running</td>`).FindAllStringSubmatch(dom, -1)
	if len(rows) != 3 {
		t.Errorf("running task rows in the browser's DOM: %d, want 3\n%s", len(rows), dom)
	}
	sized := regexp.MustCompile(`<td>event-ids</td><td>0_\d</td><td class="n">[1-9][0-9.]* (B|KiB)</td>`).FindAllString(dom, -1)
	if len(sized) != 3 {
		t.Errorf("event-ids rows with a size in the browser's DOM: %d, want 3", len(sized))
	}
	for _, want := range []string{
		"onceflow · " + env.Name("orders-app") + " · orders-1",
		fmt.Sprintf("%d / ", events+dups), // records in / out
		fmt.Sprintf(`<td>duplicate</td><td class="n warn">%d</td>`, dups),
		"headroom to the transaction timeout",
		"size in force: records / interval",
		`<table id="state">`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the browser's DOM lacks %q", want)
		}
	}

	shot := filepath.Join(t.TempDir(), "status-page.png")
	browse(t, bin, srv.url+"/", "--screenshot="+shot, "--window-size=1000,1560")
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if w := img.Bounds().Dx(); w != 1000 {
		t.Errorf("screenshot width %d, want 1000", w)
	}
	colors := map[uint32]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 7 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[r>>8<<16|g>>8<<8|b>>8] = true
		}
	}
	if len(colors) < 10 {
		t.Errorf("screenshot has %d colours: blank?", len(colors))
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("..", "docs", "status-page.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
