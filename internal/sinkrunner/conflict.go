package sinkrunner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/onceflow/onceflow/internal/kafka"
)

// ClassConflict is the class (sinks.HeaderClass) of a delivery
// dead-lettered because its idempotency key was settled, or is being
// delivered, with another payload.
const ClassConflict = "conflict"

// payloadHash is the hash a ledger entry keeps of its delivery's payload
// (hex SHA-256).
func payloadHash(payload []byte) string {
	h := sha256.Sum256(payload)
	return hex.EncodeToString(h[:])
}

// conflicts reports whether an outbox record with payload reuses the
// key of this entry for another payload. An entry written before entries
// kept a hash conflicts with nothing.
func (e Entry) conflicts(payload []byte) bool {
	return e.State != "" && e.PayloadHash != "" && e.PayloadHash != payloadHash(payload)
}

// conflictKey is the key under which the ledger and the dead-letter
// topic hold a delivery whose idempotency key conflicts: the key and the
// outbox record's place, the same every time the record is read.
func conflictKey(key string, rec *kafka.Record) string {
	return key + "!conflict@" + strconv.Itoa(int(rec.Partition)) + "/" + strconv.FormatInt(rec.Offset, 10)
}

// conflict handles an outbox record whose idempotency key the ledger
// holds with another payload (a key function that gives two deliveries
// one key, or a recreated input topic whose offsets start again). It is
// neither skipped as settled nor sent under that key, which would
// apply one payload's effect for another: it goes on under its own
// conflict key, dead-lettered (class conflict) the first time, as that
// key's ledger entry says after (skipped once dead-lettered, delivered
// once redriven). It returns the key, entry and action to go on with,
// and false when the ledger could not be read.
func (r *Runner) conflict(p *partition, rec *kafka.Record, key string, e Entry) (string, Entry, Action, bool) {
	sk := p.sink
	ckey := conflictKey(key, rec)
	ce, err := r.ledgers.get(sk.ledger, p.part, ckey)
	if err != nil {
		if ce, err = undecodable(ce, err, header(rec.Headers, kafka.SourceHeader), r.cfg.Now()); err != nil {
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
	source := header(rec.Headers, kafka.SourceHeader)
	r.log.Error("idempotency key reused with another payload; not sent, dead-lettering it under a key of its own",
		"sink", sk.name, "key", key, "state", e.State, "payload_sha256", e.PayloadHash, "source", e.Source,
		"conflict_key", ckey, "conflict_payload_sha256", hash, "conflict_source", source,
		"outbox", rec.Topic+"/"+strconv.Itoa(int(rec.Partition))+"/"+strconv.FormatInt(rec.Offset, 10))
	ce = Entry{State: Failed, Class: ClassConflict, Source: source, First: now, Updated: now, PayloadHash: hash,
		LastError: fmt.Sprintf("conflict: idempotency key %q is %s with another payload (sha256 %s, source %q); this payload (sha256 %s) was not sent",
			key, e.State, e.PayloadHash, e.Source, hash)}
	return ckey, ce, DeadLetter, true
}
