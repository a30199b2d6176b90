package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// runOrders is the state scenario: order events (10% duplicates, 1%
// conflicts, 5% out of order) with their truth, three `run orders`
// replicas with their own state, r3 SIGKILLed and restarted on its state
// while events flow; then the truth check, and a cold restore (an empty
// state directory restoring every task) for the restore rate.
func runOrders(ctx context.Context, r *run) error {
	app, in, out := "orders-"+r.id, "orders-in-"+r.id, "orders-totals-"+r.id
	rejected := app + "-rejected"
	r.printf("brokers %s; work dir %s", r.brokers[0], r.dir)
	truth, err := r.produceOrders(ctx, in)
	if err != nil {
		return err
	}
	line := []string{"run", "orders", "--app-id", app, "--input", in, "--output", out}
	reps, err := r.startThree("", line...)
	if err != nil {
		return err
	}
	if err := r.killLoop(ctx, reps, app, in, r.cfg.Records, r.cfg.Kills); err != nil {
		return err
	}
	if err := r.caughtUp(ctx, app, in, 20*time.Minute, false); err != nil {
		return err
	}
	r.printf("restarted r3: %s %d", restoredMetric, metric(ctx, reps[2], restoredMetric))
	stopAll(reps)

	r.printf("verify --truth %s --input %s --output %s --rejected %s (read_committed)", filepath.Join(r.dir, "truth.json"), in, out, rejected)
	rep, err := verify.CheckTruth(ctx, r.brokers, truth, in, out, rejected)
	if err != nil {
		return fmt.Errorf("scenario: verify: %w", err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	r.report("verify.json", b)

	// Cold restore: one replica with an empty state directory restores
	// every task.
	t0 := time.Now()
	cold, err := r.start("r1-cold", "r1", line...)
	if err != nil {
		return err
	}
	if err := readyWithin(ctx, 10*time.Minute, cold); err != nil {
		return err
	}
	d := time.Since(t0).Seconds()
	n := metric(ctx, cold, restoredMetric)
	r.printf("cold restore: %d changelog records in %.2f s to ready (process start, group join and restore) = %d records/s", n, d, int64(math.Round(float64(n)/d)))
	if log, err := os.ReadFile(cold.LogPath); err == nil {
		lines := restoredLogLine.FindAllString(string(log), -1)
		for _, l := range lines[max(0, len(lines)-3):] {
			r.printf("%s", l)
		}
	}
	if !rep.OK {
		return ErrCheckFailed
	}
	return nil
}

// restoredLogLine is a replica's log line about a restore.
var restoredLogLine = regexp.MustCompile(`(?m)^.*("restored|restored:).*$`)

// produceOrders writes the scenario's order events to topic (6
// partitions), keeps the truth in the run's directory and prints what it
// wrote.
func (r *run) produceOrders(ctx context.Context, topic string) (gen.Truth, error) {
	began := time.Now()
	truth, err := gen.ProduceOrders(ctx, gen.OrdersConfig{Brokers: r.brokers, Topic: topic, Events: r.cfg.Records, Partitions: 6,
		Customers: gen.DefaultCustomers, DuplicateRate: gen.DefaultDuplicateRate, ConflictRate: gen.DefaultConflictRate,
		OutOfOrderRate: gen.DefaultOutOfOrderRate, Seed: 1, Logger: r.cfg.Logger.Named("producer")})
	if err != nil {
		return gen.Truth{}, fmt.Errorf("scenario: produce: %w", err)
	}
	r.printf("produced %d order events to %s (%d partitions, %d customers, seed %d) in %s", truth.EventsTotal, truth.Topic,
		truth.Partitions, truth.Customers, truth.Seed, time.Since(began).Round(time.Millisecond))
	r.printf("truth: %d unique events, %d accepted; rejections: %d duplicate, %d conflict, %d stale; %d customer totals",
		truth.EventsUnique, truth.Accepted, truth.DuplicatesInjected, truth.ConflictsInjected, truth.StaleInjected, len(truth.Totals))
	path := filepath.Join(r.dir, "truth.json")
	if err := truth.WriteFile(path); err != nil {
		return gen.Truth{}, fmt.Errorf("scenario: %w", err)
	}
	r.printf("truth written to %s", path)
	return truth, nil
}
