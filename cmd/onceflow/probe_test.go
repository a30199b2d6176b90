package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// probe exits 0 on 2xx, 1 on another answer, 2 when nothing answers.
func TestProbeCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.Write([]byte("ok\n"))
			return
		}
		http.Error(w, "engine: stalled", http.StatusServiceUnavailable)
	}))
	url := srv.URL
	if code, out, _ := cli(t, context.Background(), "probe", url+"/healthz"); code != exitOK || out != "ok\n" {
		t.Errorf("healthy: exit %d, out %q", code, out)
	}
	if code, _, stderr := cli(t, context.Background(), "probe", url+"/readyz"); code != exitFailed || !strings.Contains(stderr, "503") || !strings.Contains(stderr, "engine: stalled") {
		t.Errorf("unhealthy: exit %d, stderr %q", code, stderr)
	}
	srv.Close()
	if code, _, _ := cli(t, context.Background(), "probe", url+"/healthz"); code != exitError {
		t.Errorf("unreachable: exit %d, want %d", code, exitError)
	}
}
