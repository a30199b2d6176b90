package kafka

import (
	"crypto/tls"
	"strings"
	"testing"
)

// The changelog reader's franz-go options: one for TLS, one for SASL, and
// every configuration problem named at once, without the password.
func TestFranzSecurity(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tls     *tls.Config
		s       SASL
		opts    int
		wantErr string
	}{
		{"plaintext", nil, SASL{}, 0, ""},
		{"tls", &tls.Config{}, SASL{}, 1, ""},
		{"tls and plain", &tls.Config{}, SASL{Mechanism: "PLAIN", User: "u", Password: "p"}, 2, ""},
		{"plain without a user", nil, SASL{Mechanism: "PLAIN"}, 0, "SASL PLAIN needs a user"},
		{"a user without a mechanism", nil, SASL{User: "u"}, 0, "needs a SASL mechanism"},
		{"plain without a password", nil, SASL{Mechanism: "PLAIN", User: "u"}, 0, "SASL PLAIN needs a password"},
		{"scram-sha-256", nil, SASL{Mechanism: "SCRAM-SHA-256", User: "u", Password: "p"}, 1, ""},
		{"scram-sha-512, lower case, with tls", &tls.Config{}, SASL{Mechanism: "scram-sha-512", User: "u", Password: "p"}, 2, ""},
		{"scram without a user", nil, SASL{Mechanism: "SCRAM-SHA-512", Password: "p"}, 0, "SASL SCRAM-SHA-512 needs a user"},
		{"unknown mechanism", nil, SASL{Mechanism: "GSSAPI", User: "u", Password: "secret"}, 0, `"GSSAPI" is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 are)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := franzSecurity(tc.tls, tc.s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if verr := (Client{Brokers: []string{"b:9092"}, SASL: tc.s}).Validate(); verr == nil || !strings.Contains(verr.Error(), tc.wantErr) {
					t.Fatalf("Client.Validate: %v, want %q", verr, tc.wantErr)
				}
				return
			}
			if err != nil || len(opts) != tc.opts {
				t.Fatalf("%d options, %v; want %d", len(opts), err, tc.opts)
			}
		})
	}
}
