package registry_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/serde/registry"
	"github.com/twmb/franz-go/pkg/sr"
)

// Answers that are not the registry saying "no such schema" are outages,
// never a rejection: a 404 without the registry's error body (a proxy's
// or an ingress's page while the registry is being redeployed, a wrong
// path prefix), credentials refused (401, 403), throttling (429), a
// registry that does not answer within Config.Timeout. Only the
// registry's own 404 (error code 40403) rejects the record.
func TestDecodeOutagesAreNotRejections(t *testing.T) {
	fake, r := newRegistry(t)
	c := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: "p"})
	good, err := c.Encode(payment{ID: "a", Amount: 1})
	if err != nil {
		t.Fatal(err)
	}
	v2id, _, err := fake.RegisterSchema("p2", sr.Schema{Schema: paymentSchemaV2})
	if err != nil {
		t.Fatal(err)
	}
	fromV2 := append([]byte{0, 0, 0, 0, byte(v2id)}, good[5:]...)
	answers := []struct {
		name   string
		status int
		body   string
	}{
		{"proxy 404 page", http.StatusNotFound, "<html><body>404 Not Found</body></html>"},
		{"401", http.StatusUnauthorized, `{"error_code":401,"message":"Unauthorized"}`},
		{"403", http.StatusForbidden, `{"error_code":40301,"message":"User is denied operation"}`},
		{"429", http.StatusTooManyRequests, `{"error_code":429,"message":"Too Many Requests"}`},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			dc := byIDBroken(t, fake.URL(), 0, func(w http.ResponseWriter) {
				w.WriteHeader(a.status)
				_, _ = w.Write([]byte(a.body))
			})
			_, err = dc.Decode(fromV2)
			if !serde.IsUnavailable(err) || errors.Is(err, registry.ErrUnknownSchema) {
				t.Errorf("registry answering %d %q: %v, want unavailable (not a rejection)", a.status, a.body, err)
			}
		})
	}
	t.Run("hangs", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		dc := byIDBroken(t, fake.URL(), 300*time.Millisecond, func(http.ResponseWriter) { <-release })
		start := time.Now()
		_, err = dc.Decode(fromV2)
		if took := time.Since(start); !serde.IsUnavailable(err) || took > 5*time.Second {
			t.Errorf("registry hanging: %v after %v, want unavailable within about the timeout", err, took)
		}
	})
	// The registry's own "schema not found" still rejects.
	if _, err := c.Decode(append([]byte{0, 0, 0, 0x30, 0x39}, good[5:]...)); !errors.Is(err, registry.ErrUnknownSchema) || serde.IsUnavailable(err) {
		t.Errorf("unknown id: %v, want ErrUnknownSchema", err)
	}
}

// byIDBroken returns an Avro codec of payment through a proxy of the
// registry at url that answers every fetch of a schema by id with broken.
func byIDBroken(t *testing.T, url string, timeout time.Duration, broken func(http.ResponseWriter)) serde.Codec[payment] {
	t.Helper()
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/schemas/ids/") && !strings.HasSuffix(req.URL.Path, "/versions") {
			broken(w)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r, err := registry.New(registry.Config{URL: srv.URL, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: "p"})
}

// A schema id that exists but is another subject's record (a Refund, not
// a Payment) is the record's fault: a permanent error, not a value.
func TestDecodeIDOfAnotherRecord(t *testing.T) {
	fake, r := newRegistry(t)
	c := avroCodec[payment](t, r, paymentSchema, registry.Subject{Topic: "p"})
	refund := `{"type":"record","name":"Refund","namespace":"shop","fields":[{"name":"reason","type":"string"}]}`
	id, _, err := fake.RegisterSchema("refunds-value", sr.Schema{Schema: refund})
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte{0, 0, 0, 0, byte(id)}, 0x06, 'b', 'a', 'd')
	v, err := c.Decode(b)
	if err == nil || serde.IsUnavailable(err) {
		t.Fatalf("a Refund's id decoded as a payment: %+v, %v; want a permanent error", v, err)
	}
	t.Logf("%v", err)
}
