package kafka

// The replica's client security: which SASL mechanisms it speaks, how a
// configuration is checked, the franz-go options of the changelog reader,
// and which errors are refusals. The tooling clients have their own
// (internal/tooling/clientcfg): they check the engine from the outside and share
// none of its code paths.

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

// The SASL mechanisms a replica speaks. Names are matched without regard
// to case.
const (
	mechanismPlain       = "PLAIN"
	mechanismSCRAMSHA256 = "SCRAM-SHA-256"
	mechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// mechanisms lists the supported SASL mechanisms, for error messages.
var mechanisms = []string{mechanismPlain, mechanismSCRAMSHA256, mechanismSCRAMSHA512}

// mechanism returns the SASL mechanism in its canonical (upper) case.
func (s SASL) mechanism() string { return strings.ToUpper(strings.TrimSpace(s.Mechanism)) }

// validate lists every problem at once (not retryable): an unknown
// mechanism, a mechanism without a user or password, a user or password
// without a mechanism. Messages never contain the password.
func (s SASL) validate() error {
	var errs []error
	switch m := s.mechanism(); m {
	case "":
		if s.User != "" || s.Password != "" {
			errs = append(errs, errors.New("a SASL user or password needs a SASL mechanism"))
		}
	case mechanismPlain, mechanismSCRAMSHA256, mechanismSCRAMSHA512:
		if s.User == "" {
			errs = append(errs, fmt.Errorf("SASL %s needs a user", m))
		}
		if s.Password == "" {
			errs = append(errs, fmt.Errorf("SASL %s needs a password", m))
		}
	default:
		errs = append(errs, fmt.Errorf("SASL mechanism %q is not supported (%s are)", s.Mechanism, strings.Join(mechanisms, ", ")))
	}
	return errors.Join(errs...)
}

// franzSecurity returns the franz-go options that encrypt (with tlsCfg,
// when set) and authenticate (with s) a client, for the changelog reader.
// A configuration validate rejects is an error (not retryable).
func franzSecurity(tlsCfg *tls.Config, s SASL) ([]kgo.Opt, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg.Clone()))
	}
	if m := s.franzMechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// franzMechanism is franz-go's mechanism for s, or nil without SASL.
func (s SASL) franzMechanism() sasl.Mechanism {
	switch s.mechanism() {
	case mechanismPlain:
		return plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()
	case mechanismSCRAMSHA256:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()
	case mechanismSCRAMSHA512:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()
	}
	return nil
}

// isAuthError reports whether err is a failure to authenticate or to be
// authorized, as franz-go or the TLS handshake reports it, that retrying
// with the same settings cannot cure: SASL authentication failed, the
// broker's or the client's certificate refused, or an ACL denied the
// request.
func isAuthError(err error) bool {
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
