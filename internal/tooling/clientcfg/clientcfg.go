package clientcfg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ProbeTimeout bounds how long Probe waits for any broker to answer. An
// unreachable cluster is reported after at most this long instead of being
// retried until the caller's context ends.
const ProbeTimeout = 10 * time.Second

// ErrUnreachable is returned (wrapped) by Probe when no broker answered a
// metadata request in time. It is retryable: the brokers may come up later.
var ErrUnreachable = errors.New("clientcfg: brokers unreachable")

// Options returns the kgo options every onceflow tooling client starts from:
// the seed brokers, a client id, the dial timeout and a logger bridged from
// hclog (nil: no logging). Callers append what is specific to them.
func Options(brokers []string, clientID string, logger hclog.Logger) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(clientID),
		kgo.DialTimeout(5 * time.Second),
	}
	if logger != nil {
		opts = append(opts, kgo.WithLogger(Logger(logger)))
	}
	return opts
}

// Probe checks that at least one broker answers a metadata request within
// ProbeTimeout (or by the context's deadline, if sooner), retrying while
// none does. A refusal retrying cannot cure (wrong credentials, a
// certificate refused, an ACL: IsAuthError) is returned at once. Otherwise the error wraps ErrUnreachable and names the brokers and the
// last cause (connection refused, no such host); a cancelled context is
// returned as is.
func Probe(ctx context.Context, cl *kgo.Client, brokers []string) error {
	began := time.Now()
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	var last error
	for {
		err := cl.Ping(pctx)
		if err == nil {
			return nil
		}
		if IsAuthError(err) {
			return fmt.Errorf("clientcfg: %s refused the connection (check the TLS and SASL settings and the ACLs): %w",
				strings.Join(brokers, ","), err)
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			last = err
		}
		select {
		case <-pctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			if last == nil {
				last = pctx.Err()
			}
			return &unreachableError{
				msg: fmt.Sprintf("brokers unreachable: no answer from %s within %s: %v",
					strings.Join(brokers, ","), time.Since(began).Round(100*time.Millisecond), last),
				cause: last,
			}
		case <-time.After(250 * time.Millisecond):
		}
	}
}

type unreachableError struct {
	msg   string
	cause error
}

func (e *unreachableError) Error() string   { return e.msg }
func (e *unreachableError) Unwrap() []error { return []error{ErrUnreachable, e.cause} }

// ParseBrokers splits a comma-separated broker list, trimming spaces and
// dropping empty entries.
func ParseBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// Logger adapts an hclog.Logger to kgo.Logger one level down: kgo logs
// retried, recovered conditions as warnings and errors (a refused dial while
// a broker starts), and the tools report what does not recover as returned
// errors. kgo error maps to hclog warn, warn to info, info to debug, debug
// to trace.
func Logger(l hclog.Logger) kgo.Logger { return kgoLogger{l} }

type kgoLogger struct{ l hclog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	switch {
	case k.l.IsTrace():
		return kgo.LogLevelDebug
	case k.l.IsDebug():
		return kgo.LogLevelInfo
	case k.l.IsInfo():
		return kgo.LogLevelWarn
	case k.l.IsWarn():
		return kgo.LogLevelError
	default:
		return kgo.LogLevelNone
	}
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	switch level {
	case kgo.LogLevelError:
		k.l.Warn(msg, keyvals...)
	case kgo.LogLevelWarn:
		k.l.Info(msg, keyvals...)
	case kgo.LogLevelInfo:
		k.l.Debug(msg, keyvals...)
	case kgo.LogLevelDebug:
		k.l.Trace(msg, keyvals...)
	}
}
