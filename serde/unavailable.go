package serde

import "errors"

// UnavailableError marks a codec error caused by something the codec
// depends on being out of reach (a schema registry that is down, times out
// or answers 5xx), not by the bytes or value given. The runtime does not
// reject the record for it: the transaction aborts and the input is read
// again, and a replica whose transactions keep failing on it stops (see
// docs/serdes.md). Decode and Encode errors of any other kind are permanent.
type UnavailableError struct {
	Err error
}

func (e *UnavailableError) Error() string { return e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable reports true: the runtime recognises the mark by this method,
// without importing this package.
func (e *UnavailableError) Unavailable() bool { return true }

// IsUnavailable reports whether err, or an error it wraps, is marked as an
// outage rather than a fault of the record.
func IsUnavailable(err error) bool {
	u, ok := errors.AsType[interface {
		error
		Unavailable() bool
	}](err)
	return ok && u.Unavailable()
}
