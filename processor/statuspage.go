package processor

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"time"
)

// statusRefresh is how often the status page reloads itself, in seconds.
const statusRefresh = 5

//go:embed status.html
var statusHTML string

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"dur": func(d time.Duration) string {
		if d >= time.Second {
			return d.Round(100 * time.Millisecond).String()
		}
		return d.Round(100 * time.Microsecond).String()
	},
	"percent": func(f float64) float64 { return 100 * f },
	"bytes":   humanBytes,
	"stateClass": func(s TaskState) string {
		switch s {
		case TaskStalled:
			return "bad"
		case TaskRestoring:
			return "warn"
		}
		return "ok"
	},
	"headroomClass": func(h float64) string {
		switch {
		case h < 0.25:
			return "bad"
		case h < 0.5:
			return "warn"
		}
		return "ok"
	},
}).Parse(statusHTML))

// humanBytes formats n bytes in binary units ("1.5 MiB").
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// WriteStatusPage renders s as the HTML status page served on /.
func WriteStatusPage(w io.Writer, s Status) error {
	return statusPage.Execute(w, struct {
		S       Status
		Refresh int
	}{s, statusRefresh})
}

// serveStatus serves the status page.
func (p *Processor) serveStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := WriteStatusPage(w, p.Status()); err != nil {
		p.log.Warn("status page failed", "error", err)
	}
}
