package clientcfg

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The SASL mechanisms onceflow's clients speak (the replica's and the
// tooling's). Names are matched without regard to case.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// Mechanisms lists the supported SASL mechanisms.
var Mechanisms = []string{MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512}

// Security is how a client authenticates and encrypts: the same settings
// a replica takes (processor.Config's TLS and SASL fields). The zero value
// is plaintext without SASL.
type Security struct {
	// TLS, when set, encrypts every connection with it.
	TLS *tls.Config
	// SASLMechanism is "" (none), "PLAIN", "SCRAM-SHA-256" or
	// "SCRAM-SHA-512", in any case.
	SASLMechanism string
	SASLUser      string
	SASLPassword  string
}

// Mechanism returns the SASL mechanism in its canonical (upper) case.
func (s Security) Mechanism() string { return strings.ToUpper(strings.TrimSpace(s.SASLMechanism)) }

// Validate lists every problem at once (not retryable): an unknown
// mechanism, a mechanism without a user or password, a user or password
// without a mechanism. Messages never contain the password.
func (s Security) Validate() error {
	var errs []error
	switch m := s.Mechanism(); m {
	case "":
		if s.SASLUser != "" || s.SASLPassword != "" {
			errs = append(errs, errors.New("a SASL user or password needs a SASL mechanism"))
		}
	case MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512:
		if s.SASLUser == "" {
			errs = append(errs, fmt.Errorf("SASL %s needs a user", m))
		}
		if s.SASLPassword == "" {
			errs = append(errs, fmt.Errorf("SASL %s needs a password", m))
		}
	default:
		errs = append(errs, fmt.Errorf("SASL mechanism %q is not supported (%s are)", s.SASLMechanism, strings.Join(Mechanisms, ", ")))
	}
	return errors.Join(errs...)
}

// Options returns the kgo options for s, to append to Options. A
// configuration Validate rejects is an error (not retryable), prefixed
// "clientcfg: ".
func (s Security) Options() ([]kgo.Opt, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("clientcfg: %w", err)
	}
	var opts []kgo.Opt
	if s.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.TLS.Clone()))
	}
	if m := s.saslMechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// saslMechanism is franz-go's mechanism for s, or nil without SASL.
func (s Security) saslMechanism() sasl.Mechanism {
	switch s.Mechanism() {
	case MechanismPlain:
		return plain.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsMechanism()
	case MechanismSCRAMSHA256:
		return scram.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsSha256Mechanism()
	case MechanismSCRAMSHA512:
		return scram.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsSha512Mechanism()
	}
	return nil
}

// IsAuthError reports whether err is a failure to authenticate or to be
// authorized that retrying with the same settings cannot cure: SASL
// authentication failed (wrong user, password or mechanism), the broker's
// or the client's certificate refused, or an ACL denied the request.
// Callers stop at once on it instead of retrying until a timeout.
func IsAuthError(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism, kerr.IllegalSaslState,
		kerr.ClusterAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var op *net.OpError
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) ||
		// A TLS alert from the broker: no client certificate, or one it refused.
		errors.As(err, &op) && op.Op == "remote error"
}
