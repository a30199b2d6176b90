package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// SecurityFlags connect a replica or a tooling command to a cluster with
// TLS (optionally with a client certificate) and SASL (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512).
type SecurityFlags struct {
	SASLMechanism         string `name:"sasl-mechanism" env:"ONCEFLOW_SASL_MECHANISM" enum:",PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" default:"" help:"SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty: none)."`
	SASLUser              string `name:"sasl-user" env:"ONCEFLOW_SASL_USER" help:"SASL user."`
	SASLPassword          string `name:"sasl-password" env:"ONCEFLOW_SASL_PASSWORD" help:"SASL password (prefer the environment variable)."`
	TLS                   bool   `name:"tls" help:"Connect with TLS."`
	TLSCA                 string `name:"tls-ca" type:"path" help:"PEM file of the CA that signed the brokers' certificates (default: the system's)."`
	TLSCert               string `name:"tls-cert" type:"path" help:"PEM client certificate, for mutual TLS."`
	TLSKey                string `name:"tls-key" type:"path" help:"PEM client key, for mutual TLS."`
	TLSInsecureSkipVerify bool   `name:"tls-insecure-skip-verify" help:"Do not verify the brokers' certificates (testing only)."`
}

// TLSConfig builds the TLS configuration, or nil for plaintext.
func (f SecurityFlags) TLSConfig() (*tls.Config, error) {
	if !f.TLS {
		if f.TLSCA != "" || f.TLSCert != "" || f.TLSKey != "" || f.TLSInsecureSkipVerify {
			return nil, errors.New("--tls-ca, --tls-cert, --tls-key and --tls-insecure-skip-verify need --tls")
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.TLSInsecureSkipVerify}
	var errs []error
	if f.TLSCA != "" {
		pem, err := os.ReadFile(f.TLSCA)
		if err != nil {
			errs = append(errs, fmt.Errorf("--tls-ca: %w", err))
		} else {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("--tls-ca %s: no PEM certificate in it", f.TLSCA))
			}
			cfg.RootCAs = pool
		}
	}
	switch {
	case f.TLSCert != "" && f.TLSKey != "":
		cert, err := tls.LoadX509KeyPair(f.TLSCert, f.TLSKey)
		if err != nil {
			errs = append(errs, fmt.Errorf("--tls-cert/--tls-key: %w", err))
		} else {
			cfg.Certificates = []tls.Certificate{cert}
		}
	case f.TLSCert != "" || f.TLSKey != "":
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}
