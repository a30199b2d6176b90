package httpsink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// signatureVersion prefixes the hex digest: a later scheme can be added
// beside it without breaking receivers.
const signatureVersion = "v1="

// Sign returns the signature header value for a body sent at ts (Unix
// seconds): "v1=" and the hex HMAC-SHA256, keyed by secret, of
// "<ts>.<body>". Signing the timestamp with the body lets a receiver
// refuse an old request replayed as is.
func Sign(secret []byte, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return signatureVersion + hex.EncodeToString(mac.Sum(nil))
}

// ErrBadSignature is returned by Verify for a missing, malformed, wrong or
// too old signature. Not retryable: the same request fails the same way.
var ErrBadSignature = errors.New("httpsink: bad signature")

// Verify checks the timestamp and signature header values of a body
// against secret. A timestamp further than tolerance from now (either
// way) is refused; tolerance 0 accepts any time.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q", ErrBadSignature, timestamp)
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: timestamp %d is %s from now (tolerance %s)", ErrBadSignature, ts, d.Round(time.Second), tolerance)
		}
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(strings.TrimSpace(signature)), []byte(want)) {
		return fmt.Errorf("%w: signature does not match", ErrBadSignature)
	}
	return nil
}
