package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

// runPageviews is the windowed example end to end: page views (5% out of
// order within the 5-minute grace, 1% beyond it) with their truth, three
// `run pageviews` replicas with their own state, r3 SIGKILLed and
// restarted on its state while views flow; then every user-hour window's
// final count once, equal to the truth, and every late view rejected.
func runPageviews(ctx context.Context, r *run) error {
	app, in, out := "pageviews-"+r.id, "pageviews-in-"+r.id, "pageviews-hourly-"+r.id
	rejected := app + "-rejected"
	r.printf("brokers %s; work dir %s", r.brokers[0], r.dir)
	t0 := time.Now()
	truth, err := gen.ProducePageviews(ctx, gen.PageviewsConfig{Brokers: r.brokers, Topic: in, Events: r.cfg.Records, Partitions: 6,
		OutOfOrderRate: 0.05, LateRate: 0.01, Seed: 1, Logger: r.cfg.Logger.Named("producer")})
	if err != nil {
		return fmt.Errorf("scenario: produce: %w", err)
	}
	truthPath := filepath.Join(r.dir, "truth.json")
	if err := truth.WriteFile(truthPath); err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	r.printf("produced %d page views to %s (%d partitions, %d users, seed %d) in %s", truth.Events, truth.Topic, truth.Partitions,
		truth.Users, truth.Seed, time.Since(t0).Round(time.Millisecond))
	r.printf("truth: %d windows, %d out of order within grace, %d late", len(truth.Windows), truth.OutOfOrder, truth.Late)
	reps, err := r.startThree("", "run", "pageviews", "--app-id", app, "--input", in, "--output", out)
	if err != nil {
		return err
	}
	if err := r.killLoop(ctx, reps, app, in, r.cfg.Records, r.cfg.Kills); err != nil {
		return err
	}
	if err := r.caughtUp(ctx, app, in, 20*time.Minute, false); err != nil {
		return err
	}
	t1 := time.Now()
	for _, rep := range reps[:2] {
		r.printf("%s: late rejections %d", rep.Name, metric(ctx, rep, rejectedMetric, "reason", wire.ReasonLate))
	}
	stopAll(reps)
	r.printf("produced and processed in %.1f s", t1.Sub(t0).Seconds())

	r.printf("pageviews verify --truth %s --output %s --rejected %s (read_committed)", truthPath, out, rejected)
	rep, err := verify.CheckPageviews(ctx, r.brokers, truth, out, rejected)
	if err != nil {
		return fmt.Errorf("scenario: verify: %w", err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	r.report("verify.json", b)
	if !rep.OK {
		return ErrCheckFailed
	}
	return nil
}
