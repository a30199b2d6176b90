//go:build browser

package topology_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// The Mermaid charts DescribeMermaid writes render with Mermaid itself, in
// headless Chromium, and a broken chart does not (the check can fail).
// ONCEFLOW_MERMAID_JS names mermaid.min.js (npm install mermaid@12.3.0:
// node_modules/mermaid/dist/mermaid.min.js); the test skips without it or
// without chromium.
func TestMermaidRenders(t *testing.T) {
	js := os.Getenv("ONCEFLOW_MERMAID_JS")
	if js == "" {
		t.Skip("ONCEFLOW_MERMAID_JS is unset (path of mermaid.min.js)")
	}
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium on PATH (apt-get install chromium)")
	}
	js, err = filepath.Abs(js)
	if err != nil {
		t.Fatal(err)
	}
	for name, chart := range map[string]string{
		"every kind": everyKind().DescribeMermaid(),
		"broken":     "flowchart LR\n  a[\"x\" -->\n",
	} {
		got := renderMermaid(t, bin, js, chart)
		if want := name != "broken"; got != want {
			t.Errorf("%s: rendered %v, want %v", name, got, want)
		}
	}
}

// renderMermaid loads chart into a page with Mermaid and reports whether
// it rendered to an SVG.
func renderMermaid(t *testing.T, bin, js, chart string) bool {
	t.Helper()
	dir := t.TempDir()
	text, _ := json.Marshal(chart)
	page := `<!DOCTYPE html><html><body><pre id="out">pending</pre>
<script src="file://` + js + `"></script>
<script>
mermaid.initialize({startOnLoad: false});
mermaid.render("chart", ` + string(text) + `)
  .then(r => { document.getElementById("out").textContent = "rendered " + r.svg.length; })
  .catch(e => { document.getElementById("out").textContent = "error " + String(e.message || e); });
</script></body></html>`
	file := filepath.Join(dir, "chart.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--allow-file-access-from-files",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--virtual-time-budget=30000", "--dump-dom", "file://"+file).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	m := regexp.MustCompile(`<pre id="out">([^<]*)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no result in the page:\n%s", out)
	}
	t.Logf("%.120s", m[1])
	return regexp.MustCompile(`^rendered \d+$`).Match(m[1])
}
