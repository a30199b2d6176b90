package clientcfg_test

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/clientcfg"
)

func TestSecurityOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       clientcfg.Security
		opts    int
		wantErr string
	}{
		{"plaintext", clientcfg.Security{}, 0, ""},
		{"tls", clientcfg.Security{TLS: &tls.Config{}}, 1, ""},
		{"tls and plain", clientcfg.Security{TLS: &tls.Config{}, SASLMechanism: "PLAIN", SASLUser: "u", SASLPassword: "p"}, 2, ""},
		{"plain without a user", clientcfg.Security{SASLMechanism: "PLAIN"}, 0, "SASL PLAIN needs a user"},
		{"a user without a mechanism", clientcfg.Security{SASLUser: "u"}, 0, "needs a SASL mechanism"},
		{"scram", clientcfg.Security{SASLMechanism: "SCRAM-SHA-256", SASLUser: "u"}, 0, `"SCRAM-SHA-256" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := tc.s.Options()
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), "clientcfg: ") || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(opts) != tc.opts {
				t.Fatalf("%d options, %v; want %d", len(opts), err, tc.opts)
			}
		})
	}
}
