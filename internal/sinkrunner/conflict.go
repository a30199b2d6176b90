package sinkrunner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/wire"
)

// ClassConflict is the class (wire.HeaderSinkClass) of a delivery
// dead-lettered because its idempotency key was settled, or is being
// delivered, with another payload.
const ClassConflict = "conflict"

// payloadHash is the hash a ledger entry keeps of its delivery's payload
// (hex SHA-256).
func payloadHash(payload []byte) string {
	h := sha256.Sum256(payload)
	return hex.EncodeToString(h[:])
}

// conflicts says why an outbox record reuses the key of this entry for
// another request ("" when it does not): another payload; or, for a key
// made from the consumed record's coordinates (defaultKey), another
// request time, as when the input topic was recreated or its offsets
// reset, so its offsets name other records. An entry written before
// entries kept a hash (or a request time) conflicts with nothing by it.
func (e Entry) conflicts(rec *kafka.Record, defaultKey bool) string {
	switch {
	case e.State == "":
		return ""
	case e.PayloadHash != "" && e.PayloadHash != payloadHash(rec.Value):
		return "it has another payload"
	case defaultKey && !e.Requested.IsZero() && e.Requested.UnixMilli() != rec.Timestamp.UnixMilli():
		return fmt.Sprintf("it has the same payload, requested at another time (%s, was %s): the input topic was recreated or its offsets reset",
			rec.Timestamp.UTC().Format(time.RFC3339Nano), e.Requested.UTC().Format(time.RFC3339Nano))
	}
	return ""
}

// conflictKey is the key under which the ledger and the dead-letter
// topic hold a delivery whose idempotency key conflicts: the key and the
// outbox record's place, the same every time the record is read.
func conflictKey(key string, rec *kafka.Record) string {
	return key + "!conflict@" + strconv.Itoa(int(rec.Partition)) + "/" + strconv.FormatInt(rec.Offset, 10)
}

// conflict handles an outbox record whose idempotency key the ledger
// holds for another request, for the reason why (a key function that
// gives two deliveries one key, or a recreated input topic whose offsets
// start again). It is
// neither skipped as settled nor sent under that key, which would
// apply one payload's effect for another: it goes on under its own
// conflict key, dead-lettered (class conflict) the first time, as that
// key's ledger entry says after (skipped once dead-lettered, delivered
// once redriven). It returns the key, entry and action to go on with,
// and false when the ledger could not be read.
func (r *Runner) conflict(p *partition, rec *kafka.Record, key string, e Entry, why string) (string, Entry, Action, bool) {
	sk := p.sink
	ckey := conflictKey(key, rec)
	ce, err := r.ledgers.get(sk.ledger, p.part, ckey)
	if err != nil {
		if ce, err = undecodable(ce, err, header(rec.Headers, wire.HeaderSource), r.cfg.Now()); err != nil {
			r.log.Error("cannot read the delivery ledger; joining again", "sink", sk.name, "key", ckey, "error", err)
			p.ss.cancel()
			p.ss.end()
			return "", Entry{}, Skip, false
		}
		r.log.Error("ledger entry does not decode; delivery parked as unknown", "sink", sk.name, "key", ckey, "error", ce.LastError)
		return ckey, ce, Park, true
	}
	if ce.State != "" {
		ce, act := ce.Resume(sk.idempotent, r.cfg.Now())
		return ckey, ce, act, true
	}
	now := r.cfg.Now()
	hash := payloadHash(rec.Value)
	source := header(rec.Headers, wire.HeaderSource)
	r.log.Error("idempotency key reused by another request; not sent, dead-lettering it under a key of its own",
		"sink", sk.name, "key", key, "why", why, "state", e.State, "payload_sha256", e.PayloadHash, "source", e.Source,
		"conflict_key", ckey, "conflict_payload_sha256", hash, "conflict_source", source,
		"outbox", rec.Topic+"/"+strconv.Itoa(int(rec.Partition))+"/"+strconv.FormatInt(rec.Offset, 10))
	ce = Entry{State: Failed, Class: ClassConflict, Source: source, First: now, Updated: now, PayloadHash: hash, Requested: rec.Timestamp,
		LastError: fmt.Sprintf("conflict: idempotency key %q is %s for another request (sha256 %s, source %q); this one (sha256 %s) was not sent: %s",
			key, e.State, e.PayloadHash, e.Source, hash, why)}
	return ckey, ce, DeadLetter, true
}
