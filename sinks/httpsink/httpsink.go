package httpsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/onceflow/onceflow/sinks"
)

// Header names a delivery carries.
const (
	// HeaderIdempotencyKey is the IETF draft's header
	// (draft-ietf-httpapi-idempotency-key-header): the same on every
	// attempt of one delivery.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderFence holds the runner's fence, "<generation>/<partition>": a
	// receiver that remembers the highest generation per partition can
	// refuse a zombie's late write.
	HeaderFence = "Onceflow-Fence"
	// HeaderAttempt is the attempt number, from 1.
	HeaderAttempt = "Onceflow-Attempt"
	// HeaderSink is the sink's name in the topology.
	HeaderSink = "Onceflow-Sink"
	// HeaderSource names the input record ("topic/partition/offset").
	HeaderSource = "Onceflow-Source"
	// HeaderTimestamp is the signing time, in Unix seconds (only with a
	// secret).
	HeaderTimestamp = "Onceflow-Timestamp"
	// HeaderSignature is "v1=<hex HMAC-SHA256>" over "<timestamp>.<body>"
	// (only with a secret).
	HeaderSignature = "Onceflow-Signature"
)

// errorBodyLimit bounds how much of an error answer's body is kept in the
// error message; drainLimit how much of any body is read so the connection
// can be reused.
const (
	errorBodyLimit = 512
	drainLimit     = 64 << 10
)

// Config configures an HTTP sink. The zero value of every field but URL
// means its default.
type Config struct {
	// URL receives each delivery as a POST. Required; http or https.
	URL string
	// ContentType is the body's media type. Default "application/json".
	ContentType string
	// Header holds extra headers sent with every delivery (authorisation,
	// for instance). Default none.
	Header http.Header
	// Secret, when set, signs every delivery with HMAC-SHA256 (see Sign).
	// Default: unsigned.
	Secret []byte
	// NotIdempotent says the endpoint does not honour Idempotency-Key, so
	// an attempt whose outcome is unknown must not be re-sent (the runner
	// parks it). Default false: the endpoint keeps the key and re-sends
	// are safe.
	NotIdempotent bool
	// Client sends the requests. Default: a client of its own that never
	// follows redirects and keeps up to 1024 keep-alive connections to the
	// endpoint; each attempt is bounded by the Deliver context, not by a
	// client timeout. A client given here is used as is, except
	// that redirects are never followed (a POST redirected would become a
	// GET).
	Client *http.Client
	// Now is the clock (signature timestamps, Retry-After dates). Default
	// time.Now.
	Now func() time.Time
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		errs = append(errs, errors.New("httpsink: URL is required"))
	case err != nil:
		errs = append(errs, fmt.Errorf("httpsink: URL: %w", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("httpsink: URL %q: scheme must be http or https", c.URL))
	case u.Host == "":
		errs = append(errs, fmt.Errorf("httpsink: URL %q has no host", c.URL))
	}
	return errors.Join(errs...)
}

// Sink posts deliveries to one URL. It is safe for concurrent use.
type Sink struct {
	cfg    Config
	client *http.Client
}

// New returns an HTTP sink. It does no I/O.
func New(cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ContentType == "" {
		cfg.ContentType = "application/json"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := &http.Client{Transport: newTransport()}
	if cfg.Client != nil {
		c := *cfg.Client
		client = &c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Sink{cfg: cfg, client: client}, nil
}

// Idempotent reports whether the endpoint honours Idempotency-Key (see
// Config.NotIdempotent).
func (s *Sink) Idempotent() bool { return !s.cfg.NotIdempotent }

// Deliver posts d.Payload. It returns nil on a 2xx answer and a classified
// error (sinks.Error) otherwise:
//
//   - a failure before the request was written (refused, DNS, TLS
//     handshake): transient, the request never left;
//   - a timeout, a reset or a closed connection after it was written and
//     before an answer: unknown, the endpoint may have applied it;
//   - 408, 425, 429, 5xx: transient, with Retry-After when the answer has
//     one (seconds or an HTTP date);
//   - 409: transient (the draft's "a request with this key is still being
//     processed");
//   - 422: permanent (the draft's "key reused with a different payload");
//   - any other answer (other 4xx, 3xx, 1xx): permanent.
//
// The error's cause is a *StatusError when an answer came back.
func (s *Sink) Deliver(ctx context.Context, d sinks.Delivery) error {
	req, err := s.request(ctx, d)
	if err != nil {
		return sinks.PermanentError(err)
	}
	// Once the headers are written, the request may have reached the
	// endpoint: a failure from then on has an unknown outcome.
	var sent atomic.Bool
	trace := &httptrace.ClientTrace{WroteHeaders: func() { sent.Store(true) }}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))

	resp, err := s.client.Do(req)
	if err != nil {
		err = fmt.Errorf("httpsink: post %s: %w", s.cfg.URL, err)
		if sent.Load() {
			return sinks.UnknownError(err)
		}
		return sinks.TransientError(err, 0)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		return nil
	}
	return s.classify(resp)
}

// request builds the POST of one delivery.
func (s *Sink) request(ctx context.Context, d sinks.Delivery) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return nil, fmt.Errorf("httpsink: %w", err)
	}
	for k, vs := range s.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", s.cfg.ContentType)
	if d.IdempotencyKey != "" {
		if s.cfg.NotIdempotent {
			// net/http re-sends by itself a request whose answer was lost
			// on a reused connection when the request carries the
			// canonical Idempotency-Key header (see Request.isReplayable).
			// To an endpoint that ignores the key, that re-send could
			// apply the effect twice: the same header under a lower-case
			// map key reaches the wire unchanged (names are
			// case-insensitive) but keeps the transport from replaying;
			// the failure then comes back as an unknown outcome.
			req.Header["idempotency-key"] = []string{d.IdempotencyKey}
		} else {
			req.Header.Set(HeaderIdempotencyKey, d.IdempotencyKey)
		}
	}
	req.Header.Set(HeaderFence, d.Fence.String())
	req.Header.Set(HeaderAttempt, strconv.Itoa(d.Attempt))
	if d.Sink != "" {
		req.Header.Set(HeaderSink, d.Sink)
	}
	if d.Source != "" {
		req.Header.Set(HeaderSource, d.Source)
	}
	if len(s.cfg.Secret) > 0 {
		ts := s.cfg.Now().Unix()
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(HeaderSignature, Sign(s.cfg.Secret, ts, d.Payload))
	}
	return req, nil
}

// maxIdleConns is how many keep-alive connections the default client keeps
// to the endpoint: enough for every delivery the runner has in flight.
// net/http's default keeps 2 per host, so that with more deliveries in
// flight most requests would open a new connection (and leave one in
// TIME_WAIT).
const maxIdleConns = 1024

// newTransport is net/http's default transport keeping maxIdleConns
// connections to the endpoint.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = maxIdleConns
	t.MaxIdleConnsPerHost = maxIdleConns
	return t
}

// StatusError is an answer other than 2xx.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// Body is the start of the answer's body.
	Body string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("httpsink: status %d %s", e.Code, http.StatusText(e.Code))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// classify turns a non-2xx answer into a classified error.
func (s *Sink) classify(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	serr := &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	code := resp.StatusCode
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly,
		code == http.StatusTooManyRequests, code == http.StatusConflict, code >= 500:
		return sinks.TransientError(serr, RetryAfter(resp.Header.Get("Retry-After"), s.cfg.Now()))
	case code == http.StatusUnprocessableEntity:
		return sinks.PermanentError(fmt.Errorf("httpsink: idempotency key reused with a different payload: %w", serr))
	case code == http.StatusPreconditionFailed:
		return sinks.PermanentError(fmt.Errorf("httpsink: %w: %w", sinks.ErrFenced, serr))
	}
	return sinks.PermanentError(serr)
}

// RetryAfter parses a Retry-After value (RFC 9110, 10.2.3): delay seconds
// or an HTTP date, taken relative to now. It returns 0 for an empty,
// malformed or past value.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		const maxSecs = int64(1<<63-1) / int64(time.Second)
		return time.Duration(min(secs, maxSecs)) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return max(t.Sub(now), 0)
}
