package processor

import (
	_ "embed"
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
