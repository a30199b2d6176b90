package main

import (
	"fmt"
	"net"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/receiver"
)

// ReceiverCmd is `onceflow receiver`.
type ReceiverCmd struct {
	Addr            string        `name:"addr" default:"127.0.0.1:8080" help:"Address to listen on (port 0 picks one)."`
	Secret          string        `name:"secret" env:"ONCEFLOW_RECEIVER_SECRET" help:"Require an HMAC-SHA256 signature with this secret (401 otherwise)."`
	DropRate        float64       `name:"drop-rate" help:"Share of applied requests whose connection is closed without an answer."`
	UnavailableRate float64       `name:"unavailable-rate" help:"Share of requests answered 503 with Retry-After, not applied."`
	ThrottleRate    float64       `name:"throttle-rate" help:"Share of requests answered 429 with Retry-After, not applied."`
	BadRequestRate  float64       `name:"bad-request-rate" help:"Share of requests answered 400, not applied (never for a key already applied)."`
	RetryAfter      time.Duration `name:"retry-after" default:"1s" help:"Retry-After of 503 and 429 answers (whole seconds)."`
	Delay           time.Duration `name:"delay" help:"Processing time of each request before its effect is applied."`
	NotIdempotent   bool          `name:"not-idempotent" help:"Ignore the Idempotency-Key: apply every request, counting a second effect for one key as a violation."`
	Seed            uint64        `name:"seed" default:"1" help:"Seed of the misbehaviour."`
}

// Run serves until the context ends, then prints the final counters.
func (c *ReceiverCmd) Run(env *Env) error {
	r, err := receiver.New(receiver.Config{
		Secret:          []byte(c.Secret),
		DropRate:        c.DropRate,
		UnavailableRate: c.UnavailableRate,
		ThrottleRate:    c.ThrottleRate,
		BadRequestRate:  c.BadRequestRate,
		RetryAfter:      c.RetryAfter,
		Delay:           c.Delay,
		NotIdempotent:   c.NotIdempotent,
		Seed:            c.Seed,
		Logger:          env.Logger.Named("receiver"),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("receiver: %w", err)
	}
	fmt.Fprintf(env.Stdout, "receiver listening on http://%s (POST deliveries to any path, GET /stats); stop with Ctrl-C\n", ln.Addr())
	if err := r.Serve(env.Ctx, ln); err != nil {
		return err
	}
	st := r.Stats()
	fmt.Fprintf(env.Stdout, "receiver stopped: %d effects, %d distinct keys, %d duplicate effects, %d duplicate attempts, %d violations, answers %v\n",
		st.Effects, st.DistinctKeys, st.DuplicateEffects, st.DuplicateAttempts, st.Violations, st.Answers)
	return nil
}
