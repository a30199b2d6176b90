// Package httpsink is a sinks.Sink that POSTs each delivery to a URL.
//
// Every request carries the delivery's idempotency key in the
// Idempotency-Key header (IETF draft-ietf-httpapi-idempotency-key-header),
// the same on every attempt, replica and crash, and the runner's fence in
// Onceflow-Fence ("<generation>/<partition>"). With a secret, each request
// is signed: Onceflow-Timestamp holds the Unix seconds and
// Onceflow-Signature "v1=<hex HMAC-SHA256 of "<timestamp>.<body>">"; Verify
// checks it on the receiving side.
//
// A server that honours the draft applies the effect once per key: it
// answers 400 when the key is missing, 409 while a request with the same
// key is still being processed, and 422 when the key is reused with a
// different payload. A server that keeps the highest fence per partition
// (sinks.FenceGuard, sinks.ParseFence) answers 412 to a fence below it.
// The sink classifies answers and failures accordingly (see
// Sink.Deliver): 409 and 408, 425, 429, 5xx are transient (with the
// answer's Retry-After), 412 is sinks.ErrFenced (the runner lost the
// partition: not a failure of the delivery), 422 and other 4xx
// permanent, and a failure after
// the connection was made (timeout, reset) unknown: the request may have
// been applied. The sink declares itself idempotent unless
// Config.NotIdempotent says the endpoint ignores the key; the runner then
// parks unknown outcomes instead of re-sending them.
//
// Each attempt is bounded by the context Deliver gets; the sink adds no
// timeout of its own and never follows redirects. To an idempotent
// endpoint, net/http itself re-sends, under the same key, a request whose
// answer was lost on a reused keep-alive connection; to an endpoint that
// is not, it never does (the loss comes back as an unknown outcome).
package httpsink
