package httpsink_test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/onceflow/onceflow/internal/tooling/receiver"
	"github.com/onceflow/onceflow/sinks/httpsink"
	"github.com/onceflow/onceflow/sinks/sinktest"
)

// TestConformance runs the sink conformance suite on the HTTP sink posting
// to the webhook receiver, as idempotent (the receiver keeps the key) and
// as not.
func TestConformance(t *testing.T) {
	for _, notIdempotent := range []bool{false, true} {
		t.Run(fmt.Sprintf("not idempotent %v", notIdempotent), func(t *testing.T) {
			sinktest.Run(t, func(t *testing.T) sinktest.Harness {
				r, err := receiver.New(receiver.Config{Secret: []byte("s")})
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(r)
				t.Cleanup(srv.Close)
				s, err := httpsink.New(httpsink.Config{URL: srv.URL + "/hook", Secret: []byte("s"), NotIdempotent: notIdempotent})
				if err != nil {
					t.Fatal(err)
				}
				return sinktest.Harness{Sink: s, Applied: func(key string) (int, error) { return r.Effects(key), nil }}
			})
		})
	}
}
