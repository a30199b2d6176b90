package clientcfg

import (
	"crypto/tls"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// Security is how a tooling client authenticates and encrypts: the same
// settings a replica takes (processor.Config's TLS and SASL fields). The
// zero value is plaintext without SASL.
type Security struct {
	// TLS, when set, encrypts every connection with it.
	TLS *tls.Config
	// SASLMechanism is "" (none) or "PLAIN".
	SASLMechanism string
	SASLUser      string
	SASLPassword  string
}

// Options returns the kgo options for s, to append to Options. An
// unknown mechanism, or PLAIN without a user, is an error (not
// retryable).
func (s Security) Options() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if s.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.TLS.Clone()))
	}
	switch s.SASLMechanism {
	case "":
		if s.SASLUser != "" || s.SASLPassword != "" {
			return nil, fmt.Errorf("clientcfg: a SASL user or password needs a SASL mechanism")
		}
	case "PLAIN":
		if s.SASLUser == "" {
			return nil, fmt.Errorf("clientcfg: SASL PLAIN needs a user")
		}
		opts = append(opts, kgo.SASL(plain.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsMechanism()))
	default:
		return nil, fmt.Errorf("clientcfg: SASL mechanism %q is not supported (PLAIN is)", s.SASLMechanism)
	}
	return opts, nil
}
