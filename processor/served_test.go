package processor_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/processor"
)

// served is a replica running until its test ends, with its Handler
// served over HTTP.
type served struct {
	t   *testing.T
	url string
}

// serve runs p until the test ends (Run must then return nil) and serves
// p.Handler(reg).
func serve(t *testing.T, p *processor.Processor, reg *prometheus.Registry) *served {
	t.Helper()
	srv := httptest.NewServer(p.Handler(reg))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &served{t: t, url: srv.URL}
}

// get fetches path; a failed request is status 0 with the error as body.
func (s *served) get(path string) (int, string) {
	resp, err := http.Get(s.url + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitCode fetches path until it answers want, and returns the body.
func (s *served) waitCode(path string, want int, within time.Duration) string {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, body := s.get(path)
		if code == want {
			return body
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s still %d %q after %v, want %d", path, code, body, within, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
