package processor

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the replica's endpoints, for the caller to mount on a
// server of its own (the CLI serves it on --metrics-addr):
//
//	/         a status page (HTML, refreshing itself): the replica's
//	          session, tasks, transactions, rejections and sinks (see Status)
//	/metrics  the metrics of gatherer (nil: no /metrics)
//	/healthz  200 "ok" while the replica makes progress; 503 with the
//	          stall otherwise (see Health)
//	/readyz   200 "ready" once the replica is in a group session with its
//	          tasks restored; 503 otherwise (see Ready)
func (p *Processor) Handler(gatherer prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.serveStatus)
	if gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := p.Health(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Ready() {
			http.Error(w, "not ready: not in a group session, or restoring its tasks", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}
