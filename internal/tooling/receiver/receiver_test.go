package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/sinks/httpsink"
)

// start serves a receiver with cfg and returns it with a sink posting to
// it (sinkCfg's URL is filled in).
func start(t *testing.T, cfg Config, sinkCfg httpsink.Config) (*Receiver, *httpsink.Sink, string) {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	sinkCfg.URL = srv.URL + "/hook"
	s, err := httpsink.New(sinkCfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, s, srv.URL
}

func delivery(key, payload string) sinks.Delivery {
	return sinks.Delivery{Sink: "notify", IdempotencyKey: key, Payload: []byte(payload), Attempt: 1}
}

func classOf(err error) string {
	if err == nil {
		return "ok"
	}
	c, _ := sinks.Classify(err)
	return c.String()
}

// TestOncePerKey: a key is applied once however often it is sent; the
// same key with another payload is a permanent 422; no key is a 400.
func TestOncePerKey(t *testing.T) {
	r, s, url := start(t, Config{}, httpsink.Config{})
	ctx := context.Background()
	for i := range 3 {
		if err := s.Deliver(ctx, delivery("k1", `{"n":1}`)); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if err := s.Deliver(ctx, delivery("k2", `{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	err := s.Deliver(ctx, delivery("k1", `{"n":"other"}`))
	var serr *httpsink.StatusError
	if classOf(err) != "permanent" || !errors.As(err, &serr) || serr.Code != http.StatusUnprocessableEntity {
		t.Errorf("k1 with another payload: %v, want a permanent 422", err)
	}
	resp, err := http.Post(url+"/hook", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no key: %d, want 400", resp.StatusCode)
	}

	st := r.Stats()
	want := Stats{Effects: 2, DistinctKeys: 2, DuplicateAttempts: 2, Requests: 6,
		Answers: map[string]int64{AnswerApplied: 2, AnswerReplayed: 2, AnswerConflict: 1, AnswerBadRequest: 1}}
	if fmt.Sprint(st) != fmt.Sprint(want) {
		t.Errorf("stats\n %+v\nwant\n %+v", st, want)
	}
	if st.PermanentFailures() != 2 {
		t.Errorf("permanent failures %d, want 2", st.PermanentFailures())
	}

	// GET /stats says the same.
	resp, err = http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got Stats
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GET /stats\n %+v\nwant\n %+v", got, want)
	}
}

// TestInProgressAndConcurrentDuplicates: while a key is being processed,
// another request with it gets 409 (transient); many concurrent sends of
// one key apply it once.
func TestInProgressAndConcurrentDuplicates(t *testing.T) {
	r, s, _ := start(t, Config{Delay: 300 * time.Millisecond}, httpsink.Config{})
	ctx := context.Background()
	const senders = 8
	results := make([]error, senders)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() { results[i] = s.Deliver(ctx, delivery("k", "p")) })
	}
	wg.Wait()
	classes := map[string]int{}
	for _, err := range results {
		classes[classOf(err)]++
	}
	st := r.Stats()
	if st.Effects != 1 || st.DuplicateEffects != 0 {
		t.Fatalf("%d concurrent sends of one key: %d effects (%d duplicate), want 1", senders, st.Effects, st.DuplicateEffects)
	}
	// Every sender got in before the first one finished its 300 ms: one
	// applied it, the others were told it is in progress.
	if classes["ok"] != 1 || classes["transient"] != senders-1 || st.Answers[AnswerInProgress] != senders-1 {
		t.Errorf("answers %v (stats %v), want 1 ok and %d transient 409s", classes, st.Answers, senders-1)
	}
	// Retried after the first finished: a replay, not a second effect.
	if err := s.Deliver(ctx, delivery("k", "p")); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Effects != 1 || st.DuplicateAttempts != 1 {
		t.Errorf("after a retry: %d effects, %d duplicate attempts; want 1 and 1", st.Effects, st.DuplicateAttempts)
	}
}

// TestSignatures: with a secret, unsigned or wrongly signed requests get
// 401 (permanent) and apply nothing.
func TestSignatures(t *testing.T) {
	secret := []byte("s3cret")
	r, good, url := start(t, Config{Secret: secret}, httpsink.Config{Secret: secret})
	ctx := context.Background()
	unsigned, _ := httpsink.New(httpsink.Config{URL: url + "/hook"})
	wrong, _ := httpsink.New(httpsink.Config{URL: url + "/hook", Secret: []byte("other")})
	stale, _ := httpsink.New(httpsink.Config{URL: url + "/hook", Secret: secret, Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	for name, s := range map[string]*httpsink.Sink{"unsigned": unsigned, "wrong secret": wrong, "an hour old": stale} {
		if err := s.Deliver(ctx, delivery("k", "p")); classOf(err) != "permanent" {
			t.Errorf("%s: %v, want a permanent 401", name, err)
		}
	}
	if err := good.Deliver(ctx, delivery("k", "p")); err != nil {
		t.Fatalf("signed: %v", err)
	}
	if st := r.Stats(); st.Effects != 1 || st.Answers[AnswerBadSig] != 3 {
		t.Errorf("%d effects, %d 401s; want 1 and 3", st.Effects, st.Answers[AnswerBadSig])
	}
}

// TestDroppedAnswerIsUnknown: the receiver applies, then closes the
// connection; the sender sees an unknown outcome, and its re-send is a
// replay.
func TestDroppedAnswerIsUnknown(t *testing.T) {
	r, s, _ := start(t, Config{DropRate: 1}, httpsink.Config{})
	ctx := context.Background()
	if err := s.Deliver(ctx, delivery("k", "p")); classOf(err) != "unknown" {
		t.Fatalf("dropped answer: %v, want unknown", err)
	}
	if !r.Applied("k") {
		t.Fatal("the dropped request was not applied")
	}
	if err := s.Deliver(ctx, delivery("k", "p")); err != nil {
		t.Fatalf("re-send: %v", err)
	}
	if st := r.Stats(); st.Effects != 1 || st.Answers[AnswerDropped] != 1 || st.Answers[AnswerReplayed] != 1 {
		t.Errorf("stats %+v, want 1 effect, 1 dropped, 1 replayed", st)
	}
}

// TestMisbehaviour sends 3,000 keys through a receiver that drops 20 % of
// answers after applying, answers 10 % 503, 5 % 429 and 2 % 400, with a
// sender that re-sends transient and unknown outcomes at once and
// dead-letters permanent ones. Every key is applied once or dead-lettered,
// never both; each dropped answer costs one re-send; the injected shares
// are near their rates. The same with a sender that says the endpoint is
// not idempotent: every dropped answer is then an unknown outcome.
func TestMisbehaviour(t *testing.T) {
	for _, notIdempotent := range []bool{false, true} {
		t.Run(fmt.Sprintf("not idempotent %v", notIdempotent), func(t *testing.T) { misbehaviour(t, notIdempotent) })
	}
}

func misbehaviour(t *testing.T, notIdempotent bool) {
	cfg := Config{DropRate: 0.2, UnavailableRate: 0.1, ThrottleRate: 0.05, BadRequestRate: 0.02, Seed: 42}
	r, s, _ := start(t, cfg, httpsink.Config{NotIdempotent: notIdempotent})
	ctx := context.Background()
	const keys = 3000
	var dead, transient, unknown int64
	for i := range keys {
		d := delivery(fmt.Sprintf("k%d", i), fmt.Sprintf(`{"i":%d}`, i))
		for attempt := 1; ; attempt++ {
			d.Attempt = attempt
			err := s.Deliver(ctx, d)
			c := classOf(err)
			if c == "ok" {
				break
			}
			if c == "permanent" {
				dead++
				if r.Applied(d.IdempotencyKey) {
					t.Fatalf("%s dead-lettered after it was applied", d.IdempotencyKey)
				}
				break
			}
			if c == "transient" {
				if _, after := sinks.Classify(err); after != time.Second {
					t.Fatalf("%v: Retry-After %v, want 1s", err, after)
				}
				transient++
			} else {
				unknown++
			}
		}
	}
	st := r.Stats()
	if st.Effects+dead != keys || st.DuplicateEffects != 0 || st.Effects != int64(st.DistinctKeys)-dead {
		t.Errorf("%d effects + %d dead letters, want %d keys; duplicate effects %d", st.Effects, dead, keys, st.DuplicateEffects)
	}
	if st.PermanentFailures() != dead || st.Answers[AnswerBadRequest] != dead {
		t.Errorf("receiver counted %d permanent failures, the sender dead-lettered %d", st.PermanentFailures(), dead)
	}
	// Each dropped answer costs exactly one re-send: by the sender (an
	// unknown outcome) or, to an idempotent endpoint, by net/http itself
	// on a reused connection.
	if st.DuplicateAttempts != st.Answers[AnswerDropped] || unknown > st.Answers[AnswerDropped] || unknown == 0 ||
		notIdempotent && unknown != st.Answers[AnswerDropped] {
		t.Errorf("%d dropped answers, %d duplicate attempts, %d unknown outcomes at the sender: want the first two equal, the third in (0, them]",
			st.Answers[AnswerDropped], st.DuplicateAttempts, unknown)
	}
	if got := st.Answers[AnswerUnavailable] + st.Answers[AnswerThrottled]; got != transient {
		t.Errorf("%d 503s and 429s, %d transient outcomes at the sender", got, transient)
	}
	// Shares of the draws, each within 3 standard deviations.
	draws := float64(st.Requests - st.DuplicateAttempts) // requests that rolled before applying
	near := func(name string, got int64, n, p float64) {
		sd := math.Sqrt(n * p * (1 - p))
		if math.Abs(float64(got)-n*p) > 3*sd {
			t.Errorf("%s: %d of %.0f, want about %.0f", name, got, n, n*p)
		}
	}
	near("503", st.Answers[AnswerUnavailable], draws, cfg.UnavailableRate)
	near("429", st.Answers[AnswerThrottled], draws, cfg.ThrottleRate)
	near("400", st.Answers[AnswerBadRequest], draws, cfg.BadRequestRate)
	near("dropped", st.Answers[AnswerDropped], float64(st.Effects), cfg.DropRate)
	t.Logf("%+v", st)
}

// TestFenceRegressions: a request whose generation went back for its
// partition is counted.
func TestFenceRegressions(t *testing.T) {
	r, s, _ := start(t, Config{}, httpsink.Config{})
	for i, f := range []sinks.Fence{{Generation: 2, Partition: 0}, {Generation: 3, Partition: 0}, {Generation: 1, Partition: 1}, {Generation: 2, Partition: 0}} {
		d := delivery(fmt.Sprintf("k%d", i), "p")
		d.Fence = f
		d.Payload = []byte(fmt.Sprint(i))
		if err := s.Deliver(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Stats().FenceRegressions; n != 1 {
		t.Errorf("%d fence regressions, want 1", n)
	}
}

// TestDuplicateEffectsAcrossKeys: one payload applied under two keys (a
// sender that derived two keys for one event) shows as a duplicate
// effect.
func TestDuplicateEffectsAcrossKeys(t *testing.T) {
	r, s, _ := start(t, Config{}, httpsink.Config{})
	for _, k := range []string{"a", "b"} {
		if err := s.Deliver(context.Background(), delivery(k, `{"event":"e1"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.Effects != 2 || st.DuplicateEffects != 1 {
		t.Errorf("%d effects, %d duplicate; want 2 and 1", st.Effects, st.DuplicateEffects)
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{DropRate: 1.5, UnavailableRate: 0.6, ThrottleRate: 0.6, Delay: -1}.Validate()
	for _, want := range []string{"drop rate 1.5", "add up to 1.2", "negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %q", err, want)
		}
	}
}

// TestNotIdempotentCountsViolations: a receiver that ignores the key
// applies every request, counts the second effect of a key as a violation
// (and not as a payload applied under another key), and still answers 503
// and 429 and drops answers at its rates.
func TestNotIdempotentCountsViolations(t *testing.T) {
	r, s, _ := start(t, Config{NotIdempotent: true}, httpsink.Config{NotIdempotent: true})
	ctx := context.Background()
	for i := range 3 {
		if err := s.Deliver(ctx, delivery("k1", `{"n":1}`)); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if err := s.Deliver(ctx, delivery("k2", `{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if st.Effects != 4 || st.Violations != 2 || st.DuplicateEffects != 0 || r.Effects("k1") != 3 || r.Effects("k2") != 1 {
		t.Errorf("stats %+v, k1 %d, k2 %d; want 4 effects, 2 violations, no duplicate effect, k1 3, k2 1", st, r.Effects("k1"), r.Effects("k2"))
	}

	r, s, _ = start(t, Config{NotIdempotent: true, UnavailableRate: 0.2, ThrottleRate: 0.2, DropRate: 0.2, RetryAfter: time.Second},
		httpsink.Config{NotIdempotent: true})
	classes := map[string]int{}
	for i := range 200 {
		classes[classOf(s.Deliver(ctx, delivery(fmt.Sprintf("k%d", i), fmt.Sprintf(`{"n":%d}`, i))))]++
	}
	st = r.Stats()
	if st.Answers[AnswerUnavailable] == 0 || st.Answers[AnswerThrottled] == 0 || st.Answers[AnswerDropped] == 0 || classes["transient"] == 0 || classes["unknown"] == 0 {
		t.Errorf("answers %v, classes %v: want 503s, 429s and dropped answers, seen as transient and unknown", st.Answers, classes)
	}
	if st.Violations != 0 {
		t.Errorf("%d violations for 200 distinct keys", st.Violations)
	}
}
