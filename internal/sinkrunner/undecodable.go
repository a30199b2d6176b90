package sinkrunner

import (
	"errors"
	"time"
)

// ClassUndecodable is the class of a delivery parked as unknown because
// its ledger entry did not decode.
const ClassUndecodable = "undecodable"

// undecodable reads what a ledger read error means for a delivery. An
// entry that does not decode (corrupt, or written by a newer release)
// cannot say whether the delivery was made, so it is neither sent nor
// skipped: it is parked as unknown, with the reason and the value it
// replaces, for an operator to resolve; the key and the partition's
// commit window go on. Any other error is returned as it is.
func undecodable(e Entry, err error, source string, at time.Time) (Entry, error) {
	if !errors.Is(err, ErrUndecodable) {
		return e, err
	}
	return Entry{State: Unknown, Class: ClassUndecodable, Source: source, First: at, Updated: at, Undecodable: e.Undecodable,
		LastError: err.Error() + "; whether the delivery was made is not known, so it is parked (the entry it replaces is kept)"}, nil
}
