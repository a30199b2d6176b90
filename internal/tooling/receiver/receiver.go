// Package receiver is a webhook receiver for demos and tests: it applies
// an effect once per idempotency key, as a server that honours the IETF
// Idempotency-Key draft does, counts what it applied, and misbehaves on
// purpose at configured rates so a sender's retries, unknown outcomes and
// dead letters can be exercised end to end.
//
// For each POST (any path but /stats):
//
//   - with a secret, the signature (httpsink.Verify) must hold: 401 if not;
//   - no Idempotency-Key: 400;
//   - a key being processed by another request: 409 (retry later);
//   - a key already seen with another payload (SHA-256): 422;
//   - a key already applied: 200 again, the effect not applied twice
//     (Idempotent-Replayed: true);
//   - otherwise, by the configured rates, before applying: 503 with
//     Retry-After, 429 with Retry-After, or 400 (never for a key already
//     applied); then, after Delay, the effect is applied and the answer is
//     200, or the connection is closed without an answer (the drop rate).
//
// With NotIdempotent the receiver is a server that ignores the key: it
// applies every request it admits (after the misbehaviour rolls, which
// apply to every request alike), and counts each effect beyond the first
// for one key as a violation (Stats.Violations), so a sender that re-sends
// a request whose outcome it does not know, or a zombie that sends what
// another runner sent, shows.
//
// GET /stats answers the counters as JSON (see Stats). The effect is
// counted per key and per payload: an effect applied for a payload that
// was already applied under another key is a duplicate effect (the sender
// derived two keys for one event), which a correct sender never causes.
package receiver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/httpsink"
)

// bodyLimit bounds a request's body.
const bodyLimit = 4 << 20

// Answers, as counted in Stats.Answers.
const (
	AnswerApplied     = "200"          // the effect applied now
	AnswerReplayed    = "200-replayed" // the key was applied before
	AnswerBadRequest  = "400"          // no key, or an injected bad request
	AnswerBadSig      = "401"
	AnswerInProgress  = "409"
	AnswerConflict    = "422"
	AnswerThrottled   = "429"
	AnswerUnavailable = "503"
	AnswerDropped     = "dropped" // applied, then closed without an answer
)

// Config configures a receiver. The zero value is a well-behaved receiver
// without signatures.
type Config struct {
	// Secret, when set, requires a valid signature on every request.
	Secret []byte
	// SignatureTolerance bounds the age of a signature's timestamp.
	// Default 5 minutes.
	SignatureTolerance time.Duration
	// DropRate is the share of applied requests whose connection is closed
	// without an answer (the sender cannot know it was applied).
	DropRate float64
	// UnavailableRate, ThrottleRate and BadRequestRate are the shares of
	// requests answered 503 (with Retry-After), 429 (with Retry-After)
	// and 400 instead of being applied.
	UnavailableRate float64
	ThrottleRate    float64
	BadRequestRate  float64
	// RetryAfter is the Retry-After of 503 and 429 answers, in whole
	// seconds. Default 1 s.
	RetryAfter time.Duration
	// Delay is how long each request is processed before the effect is
	// applied (the key is "in progress" meanwhile). Default none.
	Delay time.Duration
	// NotIdempotent makes the receiver ignore the Idempotency-Key: every
	// request not refused by the misbehaviour rolls is applied, a key
	// applied before included, and each such second effect is counted in
	// Stats.Violations. Default false: the IETF draft's behaviour.
	NotIdempotent bool
	// Seed seeds the misbehaviour. Default 1.
	Seed uint64
	// OnEffect, when set, is called once per applied effect.
	OnEffect func(Effect)
	// Now is the clock for signatures. Default time.Now.
	Now func() time.Time
	// Logger; nil: none.
	Logger hclog.Logger
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	for name, r := range map[string]float64{"drop": c.DropRate, "unavailable": c.UnavailableRate, "throttle": c.ThrottleRate, "bad-request": c.BadRequestRate} {
		if r < 0 || r > 1 {
			errs = append(errs, fmt.Errorf("receiver: %s rate %v is not within [0, 1]", name, r))
		}
	}
	if sum := c.UnavailableRate + c.ThrottleRate + c.BadRequestRate; sum > 1 {
		errs = append(errs, fmt.Errorf("receiver: unavailable, throttle and bad-request rates add up to %v, above 1", sum))
	}
	if c.Delay < 0 || c.RetryAfter < 0 || c.SignatureTolerance < 0 {
		errs = append(errs, errors.New("receiver: delay, retry-after and signature tolerance cannot be negative"))
	}
	return errors.Join(errs...)
}

// Effect is one applied effect, as OnEffect sees it: the request's
// idempotency key, body, and the sender's fence and attempt headers (who
// sent it, for telling a zombie's effect from its successor's).
type Effect struct {
	Key     string
	Payload []byte
	Fence   string // httpsink.HeaderFence, "<generation>/<partition>"
	Attempt string // httpsink.HeaderAttempt
}

// Stats is a snapshot of the receiver's counters.
type Stats struct {
	// Effects is the number of effects applied.
	Effects int64 `json:"effects"`
	// DistinctKeys is the number of idempotency keys seen with a
	// well-formed request.
	DistinctKeys int64 `json:"distinct_keys"`
	// DuplicateEffects counts effects applied for a payload already
	// applied under another key. Must stay 0.
	DuplicateEffects int64 `json:"duplicate_effects"`
	// DuplicateAttempts counts requests for a key already applied (the
	// sender re-sent it: a dropped answer, a timeout).
	DuplicateAttempts int64 `json:"duplicate_attempts"`
	// FenceRegressions counts requests whose fence generation was below
	// one already seen for the same partition (a zombie's late write).
	FenceRegressions int64 `json:"fence_regressions"`
	// Violations counts effects applied for an idempotency key already
	// applied (NotIdempotent only): each is an effect done twice. Must
	// stay 0.
	Violations int64 `json:"violations"`
	// Requests is the number of POSTs.
	Requests int64 `json:"requests"`
	// Answers counts requests by answer (see the Answer constants).
	Answers map[string]int64 `json:"answers"`
}

// PermanentFailures counts the answers a sender must not retry (400,
// 401, 422): each is a dead letter at a correct sender.
func (s Stats) PermanentFailures() int64 {
	return s.Answers[AnswerBadRequest] + s.Answers[AnswerBadSig] + s.Answers[AnswerConflict]
}

// entry is what the receiver keeps per idempotency key.
type entry struct {
	hash    [sha256.Size]byte
	applied bool
	busy    bool
	effects int
}

// Receiver is an http.Handler. Safe for concurrent use.
type Receiver struct {
	cfg Config
	log hclog.Logger

	mu struct {
		sync.Mutex
		rng      *rand.Rand
		keys     map[string]*entry
		payloads map[[sha256.Size]byte]int64 // effects per payload hash
		fences   map[int32]int64             // highest generation per partition
		stats    Stats
		healed   bool // no more injected answers or drops (Heal)
	}
}

// Heal stops the injected misbehaviour: from now on every request is
// answered as the receiver's mode says, nothing refused or dropped on
// purpose. A run heals its downstream before it settles what was parked,
// as an operator fixes a sink before redriving its dead letters.
func (r *Receiver) Heal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.healed = true
}

// New returns a receiver. It does no I/O.
func New(cfg Config) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SignatureTolerance == 0 {
		cfg.SignatureTolerance = 5 * time.Minute
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Receiver{cfg: cfg, log: cfg.Logger}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	r.mu.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	r.mu.keys = make(map[string]*entry)
	r.mu.payloads = make(map[[sha256.Size]byte]int64)
	r.mu.fences = make(map[int32]int64)
	r.mu.stats.Answers = make(map[string]int64)
	return r, nil
}

// Stats returns a snapshot of the counters.
func (r *Receiver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.mu.stats
	s.Answers = make(map[string]int64, len(r.mu.stats.Answers))
	for k, v := range r.mu.stats.Answers {
		s.Answers[k] = v
	}
	return s
}

// Applied reports whether the effect of key was applied.
func (r *Receiver) Applied(key string) bool { return r.Effects(key) > 0 }

// Effects returns how many effects were applied for key: 0 or 1 (more only
// with NotIdempotent).
func (r *Receiver) Effects(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.mu.keys[key]; e != nil {
		return e.effects
	}
	return 0
}

// ServeHTTP serves GET /stats and POSTed deliveries.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/stats" {
		r.serveStats(w, req)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "receiver: POST a delivery", http.StatusMethodNotAllowed)
		return
	}
	r.serveDelivery(w, req)
}

func (r *Receiver) serveStats(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "receiver: GET /stats", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(r.Stats())
}

// serveDelivery is one POST: checks, misbehaviour, the effect once.
func (r *Receiver) serveDelivery(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, bodyLimit+1))
	if err != nil || len(body) > bodyLimit {
		r.count(AnswerBadRequest)
		http.Error(w, "receiver: unreadable or oversized body", http.StatusBadRequest)
		return
	}
	if len(r.cfg.Secret) > 0 {
		err := httpsink.Verify(r.cfg.Secret, req.Header.Get(httpsink.HeaderTimestamp), req.Header.Get(httpsink.HeaderSignature),
			body, r.cfg.Now(), r.cfg.SignatureTolerance)
		if err != nil {
			r.count(AnswerBadSig)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
	}
	key := req.Header.Get(httpsink.HeaderIdempotencyKey)
	if key == "" {
		r.count(AnswerBadRequest)
		http.Error(w, "receiver: Idempotency-Key header is required", http.StatusBadRequest)
		return
	}
	hash := sha256.Sum256(body)
	answer := r.admit(key, hash, req.Header.Get(httpsink.HeaderFence))
	switch answer {
	case "":
		// admitted: the key is busy with this request.
	case AnswerReplayed:
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusOK)
		return
	default:
		r.refuse(w, answer)
		return
	}

	if r.cfg.Delay > 0 {
		time.Sleep(r.cfg.Delay)
	}
	drop := r.apply(Effect{Key: key, Payload: body, Fence: req.Header.Get(httpsink.HeaderFence), Attempt: req.Header.Get(httpsink.HeaderAttempt)}, hash)
	if drop {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return
		}
		// Cannot drop (HTTP/2): answer instead.
		r.recount(AnswerDropped, AnswerApplied)
	}
	w.WriteHeader(http.StatusOK)
}

// admit decides a request's fate under the lock: "" to go on and apply
// (the key is then busy), or the answer to give.
func (r *Receiver) admit(key string, hash [sha256.Size]byte, fence string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.stats.Requests++
	r.checkFenceLocked(fence)
	e := r.mu.keys[key]
	answer := ""
	switch {
	case r.cfg.NotIdempotent:
		answer = r.misbehaveLocked()
	case e != nil && e.hash != hash:
		answer = AnswerConflict
	case e != nil && e.busy:
		answer = AnswerInProgress
	case e != nil && e.applied:
		r.mu.stats.DuplicateAttempts++
		answer = AnswerReplayed
	default:
		answer = r.misbehaveLocked()
	}
	if e == nil {
		e = &entry{hash: hash}
		r.mu.keys[key] = e
		r.mu.stats.DistinctKeys++
	}
	if answer == "" {
		e.busy = true
	} else {
		r.mu.stats.Answers[answer]++
	}
	return answer
}

// misbehaveLocked rolls the injected answers for a key not yet applied.
func (r *Receiver) misbehaveLocked() string {
	if r.mu.healed {
		return ""
	}
	u := r.mu.rng.Float64()
	switch {
	case u < r.cfg.UnavailableRate:
		return AnswerUnavailable
	case u < r.cfg.UnavailableRate+r.cfg.ThrottleRate:
		return AnswerThrottled
	case u < r.cfg.UnavailableRate+r.cfg.ThrottleRate+r.cfg.BadRequestRate:
		return AnswerBadRequest
	}
	return ""
}

// checkFenceLocked counts a fence whose generation went back for its
// partition.
func (r *Receiver) checkFenceLocked(fence string) {
	f, err := sinks.ParseFence(fence)
	if err != nil {
		return
	}
	if seen, ok := r.mu.fences[f.Partition]; ok && f.Generation < seen {
		r.mu.stats.FenceRegressions++
		return
	}
	r.mu.fences[f.Partition] = f.Generation
}

// apply applies the effect of an admitted key once and reports whether
// the answer is to be dropped.
func (r *Receiver) apply(eff Effect, hash [sha256.Size]byte) (drop bool) {
	key := eff.Key
	r.mu.Lock()
	e := r.mu.keys[key]
	e.busy, e.applied = false, true
	e.effects++
	r.mu.stats.Effects++
	if e.effects > 1 {
		r.mu.stats.Violations++
		r.log.Warn("effect applied twice for one idempotency key", "key", key, "effects", e.effects)
	}
	if e.effects == 1 {
		r.mu.payloads[hash]++
	}
	if e.effects == 1 && r.mu.payloads[hash] > 1 {
		r.mu.stats.DuplicateEffects++
		r.log.Warn("duplicate effect: payload applied under another key", "key", key, "payload_sha256", hex.EncodeToString(hash[:8]))
	}
	drop = !r.mu.healed && r.cfg.DropRate > 0 && r.mu.rng.Float64() < r.cfg.DropRate
	answer := AnswerApplied
	if drop {
		answer = AnswerDropped
	}
	r.mu.stats.Answers[answer]++
	r.mu.Unlock()
	if r.cfg.OnEffect != nil {
		r.cfg.OnEffect(eff)
	}
	return drop
}

// refuse writes a refusal.
func (r *Receiver) refuse(w http.ResponseWriter, answer string) {
	code, _ := strconv.Atoi(answer)
	if code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(max(r.cfg.RetryAfter.Round(time.Second)/time.Second, 1))))
	}
	msg := map[string]string{
		AnswerBadRequest:  "receiver: bad request (injected)",
		AnswerInProgress:  "receiver: a request with this idempotency key is being processed",
		AnswerConflict:    "receiver: idempotency key reused with a different payload",
		AnswerThrottled:   "receiver: too many requests (injected)",
		AnswerUnavailable: "receiver: unavailable (injected)",
	}[answer]
	http.Error(w, msg, code)
}

func (r *Receiver) count(answer string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.stats.Requests++
	r.mu.stats.Answers[answer]++
}

func (r *Receiver) recount(from, to string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.stats.Answers[from]--
	r.mu.stats.Answers[to]++
}
