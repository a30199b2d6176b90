package clientcfg_test

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
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
		{"plain without a password", clientcfg.Security{SASLMechanism: "PLAIN", SASLUser: "u"}, 0, "SASL PLAIN needs a password"},
		{"scram-sha-256", clientcfg.Security{SASLMechanism: "SCRAM-SHA-256", SASLUser: "u", SASLPassword: "p"}, 1, ""},
		{"scram-sha-512, lower case, with tls", clientcfg.Security{TLS: &tls.Config{}, SASLMechanism: "scram-sha-512", SASLUser: "u", SASLPassword: "p"}, 2, ""},
		{"scram without a user", clientcfg.Security{SASLMechanism: "SCRAM-SHA-512", SASLPassword: "p"}, 0, "SASL SCRAM-SHA-512 needs a user"},
		{"unknown mechanism", clientcfg.Security{SASLMechanism: "GSSAPI", SASLUser: "u", SASLPassword: "p"}, 0, `"GSSAPI" is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 are)`},
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
