package httpsink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/sinks"
)

var clock = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func delivery() sinks.Delivery {
	return sinks.Delivery{
		Sink:           "notify",
		IdempotencyKey: "notify/ev-1",
		Payload:        []byte(`{"order":"o-1"}`),
		Source:         "orders/3/42",
		Attempt:        2,
		Fence:          sinks.Fence{Generation: 7, Partition: 3},
	}
}

// TestDeliverClassifiesAnswers posts to a server that answers with one
// status (and Retry-After) per case and checks the class, the wait and
// that exactly one request went out (no redirect followed, no retry
// inside the sink).
func TestDeliverClassifiesAnswers(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retryAfter string
		ok         bool
		class      sinks.Class
		after      time.Duration
		fenced     bool // sinks.ErrFenced
	}{
		{status: 200, ok: true},
		{status: 201, ok: true},
		{status: 204, ok: true},
		{status: 408, class: sinks.Transient},
		{status: 425, class: sinks.Transient},
		{status: 429, retryAfter: "7", class: sinks.Transient, after: 7 * time.Second},
		{status: 500, class: sinks.Transient},
		{status: 502, class: sinks.Transient},
		{status: 503, retryAfter: clock.Add(90 * time.Second).Format(http.TimeFormat), class: sinks.Transient, after: 90 * time.Second},
		{status: 503, retryAfter: "soon", class: sinks.Transient},
		{status: 504, class: sinks.Transient},
		{status: 409, retryAfter: "1", class: sinks.Transient, after: time.Second},
		{status: 422, class: sinks.Permanent},
		{status: 412, class: sinks.Permanent, fenced: true},
		{status: 400, class: sinks.Permanent},
		{status: 401, class: sinks.Permanent},
		{status: 404, class: sinks.Permanent},
		{status: 413, class: sinks.Permanent},
		{status: 301, class: sinks.Permanent},
		{status: 307, class: sinks.Permanent},
	} {
		var requests atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			if tc.retryAfter != "" {
				w.Header().Set("Retry-After", tc.retryAfter)
			}
			if tc.status/100 == 3 {
				w.Header().Set("Location", "/elsewhere")
			}
			w.WriteHeader(tc.status)
			_, _ = io.WriteString(w, "answer body")
		}))
		s, err := New(Config{URL: srv.URL, Now: func() time.Time { return clock }})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Deliver(context.Background(), delivery())
		srv.Close()
		if n := requests.Load(); n != 1 {
			t.Errorf("status %d: %d requests reached the server, want 1", tc.status, n)
		}
		if tc.ok {
			if err != nil {
				t.Errorf("status %d: %v, want success", tc.status, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("status %d: success, want %v", tc.status, tc.class)
			continue
		}
		class, after := sinks.Classify(err)
		if class != tc.class || after != tc.after {
			t.Errorf("status %d (Retry-After %q): %v after %v, want %v after %v (%v)", tc.status, tc.retryAfter, class, after, tc.class, tc.after, err)
		}
		if errors.Is(err, sinks.ErrFenced) != tc.fenced {
			t.Errorf("status %d: %v, ErrFenced %v", tc.status, err, tc.fenced)
		}
		var serr *StatusError
		if !errors.As(err, &serr) || serr.Code != tc.status || serr.Body != "answer body" {
			t.Errorf("status %d: error %v does not carry the status and body", tc.status, err)
		}
	}
}

// TestDeliverHeaders checks what the server receives: the payload, the
// idempotency key, the fence, the attempt, the sink, the source, extra
// headers, and a signature Verify accepts.
func TestDeliverHeaders(t *testing.T) {
	secret := []byte("s3cret")
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	s, err := New(Config{URL: srv.URL, Secret: secret, Header: http.Header{"Authorization": {"Bearer t"}},
		Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	d := delivery()
	if err := s.Deliver(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if got.Method != http.MethodPost || string(body) != string(d.Payload) {
		t.Fatalf("got %s with body %q, want POST with %q", got.Method, body, d.Payload)
	}
	for h, want := range map[string]string{
		HeaderIdempotencyKey: "notify/ev-1",
		HeaderFence:          "7/3",
		HeaderAttempt:        "2",
		HeaderSink:           "notify",
		HeaderSource:         "orders/3/42",
		HeaderTimestamp:      "1777896000",
		"Content-Type":       "application/json",
		"Authorization":      "Bearer t",
	} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("%s: %q, want %q", h, v, want)
		}
	}
	sig := got.Header.Get(HeaderSignature)
	if err := Verify(secret, got.Header.Get(HeaderTimestamp), sig, body, clock, time.Minute); err != nil {
		t.Errorf("the signature %q does not verify: %v", sig, err)
	}
	if err := Verify([]byte("other"), got.Header.Get(HeaderTimestamp), sig, body, clock, time.Minute); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another secret verifies: %v", err)
	}
	if err := Verify(secret, got.Header.Get(HeaderTimestamp), sig, append(body, ' '), clock, time.Minute); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another body verifies: %v", err)
	}
	if err := Verify(secret, got.Header.Get(HeaderTimestamp), sig, body, clock.Add(time.Hour), time.Minute); !errors.Is(err, ErrBadSignature) {
		t.Errorf("an hour-old signature verifies with a minute's tolerance: %v", err)
	}
}

// TestDeliverFailuresWithoutAnswer: a refused connection never sent the
// request (transient); a timeout or a connection closed after the request
// went out may have applied it (unknown).
func TestDeliverFailuresWithoutAnswer(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		s, _ := New(Config{URL: "http://" + addr})
		err = s.Deliver(context.Background(), delivery())
		if class, _ := sinks.Classify(err); err == nil || class != sinks.Transient {
			t.Fatalf("refused connection: %v (%v), want transient", class, err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
		}))
		defer srv.Close()
		defer close(release)
		s, _ := New(Config{URL: srv.URL})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := s.Deliver(ctx, delivery())
		if class, _ := sinks.Classify(err); err == nil || class != sinks.Unknown {
			t.Fatalf("timed out: %v (%v), want unknown", class, err)
		}
	})
	t.Run("dropped", func(t *testing.T) {
		var applied atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			applied.Add(1)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		s, _ := New(Config{URL: srv.URL})
		err := s.Deliver(context.Background(), delivery())
		if class, _ := sinks.Classify(err); err == nil || class != sinks.Unknown {
			t.Fatalf("dropped answer: %v (%v), want unknown", class, err)
		}
		if applied.Load() < 1 {
			t.Fatal("the server never saw the request")
		}
	})
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-3", 0},
		{" 120 ", 120 * time.Second},
		{"99999999999999999999", 0}, // not an int64, not a date
		{"9223372036854775807", time.Duration(1<<63-1) / time.Second * time.Second},
		{clock.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{clock.Add(-30 * time.Second).Format(http.TimeFormat), 0},
		{"Monday, 04-May-26 12:01:00 GMT", time.Minute}, // RFC 850, still accepted
		{"tomorrow", 0},
	} {
		if got := RetryAfter(tc.v, clock); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestConfig(t *testing.T) {
	err := Config{}.Validate()
	if err == nil || !strings.Contains(err.Error(), "URL is required") {
		t.Errorf("empty config: %v", err)
	}
	for _, u := range []string{"ftp://x/y", "http://", "://bad"} {
		if _, err := New(Config{URL: u}); err == nil {
			t.Errorf("URL %q accepted", u)
		}
	}
	s, err := New(Config{URL: "http://127.0.0.1:1/hook"})
	if err != nil || !s.Idempotent() {
		t.Errorf("default: %v, idempotent %v; want an idempotent sink", err, s != nil && s.Idempotent())
	}
	s, _ = New(Config{URL: "https://example.invalid/hook", NotIdempotent: true})
	if s.Idempotent() {
		t.Error("NotIdempotent: the sink says it is idempotent")
	}
	var _ sinks.Idempotent = s
}

// TestLostAnswerOnReusedConnection: the endpoint applies the second
// request, then closes its keep-alive connection without answering. To an
// idempotent endpoint net/http re-sends it under the same key (the
// endpoint keeps the key: safe); to one that is not, it must not: the
// sink reports an unknown outcome and the endpoint saw the request once.
func TestLostAnswerOnReusedConnection(t *testing.T) {
	for _, notIdempotent := range []bool{false, true} {
		var mu sync.Mutex
		var keys []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			mu.Lock()
			keys = append(keys, r.Header.Get(HeaderIdempotencyKey))
			n := len(keys)
			mu.Unlock()
			if n == 2 {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			}
		}))
		s, _ := New(Config{URL: srv.URL, NotIdempotent: notIdempotent})
		first, second := delivery(), delivery()
		first.IdempotencyKey, second.IdempotencyKey = "k1", "k2"
		if err := s.Deliver(context.Background(), first); err != nil {
			t.Fatal(err)
		}
		err := s.Deliver(context.Background(), second)
		srv.Close()
		class := "ok"
		if err != nil {
			c, _ := sinks.Classify(err)
			class = c.String()
		}
		want, wantKeys := "ok", "[k1 k2 k2]"
		if notIdempotent {
			want, wantKeys = "unknown", "[k1 k2]"
		}
		if class != want || fmt.Sprint(keys) != wantKeys {
			t.Errorf("not idempotent %v: %s (%v), endpoint saw %v; want %s, %s", notIdempotent, class, err, keys, want, wantKeys)
		}
	}
}

// TestKeepsConnectionsForDeliveriesInFlight: five rounds of 32 deliveries
// in flight at once reuse the connections of the first round (net/http's
// default transport keeps 2 per host, and would open about 30 new ones a
// round).
func TestKeepsConnectionsForDeliveriesInFlight(t *testing.T) {
	const inFlight, rounds = 32, 5
	var arrived sync.WaitGroup
	var newConns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		arrived.Done()
		arrived.Wait() // all of the round in flight at once
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	s, _ := New(Config{URL: srv.URL})
	for range rounds {
		arrived.Add(inFlight)
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				if err := s.Deliver(context.Background(), delivery()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if n := newConns.Load(); n > inFlight+inFlight/4 {
		t.Errorf("%d rounds of %d deliveries in flight opened %d connections, want about %d", rounds, inFlight, n, inFlight)
	}
}
