package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// runCLI is the engine core's scenario:
//
//  1. throughput, side by side in one run: for each guarantee three `run
//     copy` replicas start on an empty topic, Records records are produced
//     into 6 partitions, and the time until the group has committed
//     through the end gives records/s;
//  2. chaos: Records records, three exactly-once replicas, r3 SIGKILLed and
//     restarted Kills times during the run, then the outcome check and a
//     read_committed count of the output.
func runCLI(ctx context.Context, r *run) error {
	records, kills := r.cfg.Records, r.cfg.Kills
	r.printf("brokers %s; logs in %s", r.brokers[0], r.dir)
	rate := map[string]float64{}
	for _, g := range r.cfg.Guarantees {
		app, in, out := "tp-"+g+"-"+r.id, "tp-in-"+g+"-"+r.id, "tp-out-"+g+"-"+r.id
		if err := r.produce(ctx, in, 1, 0, nil); err != nil {
			return err
		}
		reps, err := r.startThree(app+"-", "run", "copy", "--app-id", app, "--input", in, "--output", out, "--guarantee", g)
		if err != nil {
			return err
		}
		if err := readyWithin(ctx, 30*time.Second, reps...); err != nil {
			return err
		}
		if err := r.caughtUp(ctx, app, in, time.Minute, true); err != nil {
			return err
		}
		// Let the group settle after its first commit.
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
		t0 := time.Now()
		if err := r.produce(ctx, in, records, 0, nil); err != nil {
			return err
		}
		if err := r.caughtUp(ctx, app, in, 10*time.Minute, true); err != nil {
			return err
		}
		d := time.Since(t0).Seconds()
		rate[g] = math.Round(float64(records) / d)
		r.printf("throughput %s: %d records in %.2f s = %.0f records/s", g, records, d, rate[g])
		stopAll(reps)
	}
	if eos, alo := rate["exactly_once"], rate["at_least_once"]; eos > 0 && alo > 0 {
		r.printf("exactly_once / at_least_once = %.3f", eos/alo)
	}

	// Chaos: exactly-once, r3 killed with SIGKILL and restarted kills
	// times while records flow: the input goes in kills+1 chunks, and each
	// kill lands while the replicas are working through a chunk.
	app, in, out := "chaos-"+r.id, "chaos-in-"+r.id, "chaos-out-"+r.id
	chunk := records / (kills + 1)
	if err := r.produce(ctx, in, chunk, 0, nil); err != nil {
		return err
	}
	reps, err := r.startThree(app+"-", "run", "copy", "--app-id", app, "--input", in, "--output", out, "--guarantee", "exactly_once")
	if err != nil {
		return err
	}
	victim, produced := reps[2], chunk
	for k := 1; k <= kills; k++ {
		if _, err := r.waitCommitted(ctx, app, in, int64(produced-1), reps); err != nil {
			return err
		}
		n := chunk
		if k == kills {
			n = records - produced
		}
		if err := r.produce(ctx, in, n, 0, nil); err != nil {
			return err
		}
		base := produced
		produced += n
		c, err := r.waitCommitted(ctx, app, in, int64(base), reps)
		if err != nil {
			return err
		}
		pid := victim.Pid()
		victim.Kill()
		r.printf("chaos: killed r3 (pid %d) with SIGKILL at %d of %d produced records committed; restarting it", pid, c, produced)
		if err := victim.Start(); err != nil {
			return err
		}
	}
	if err := r.caughtUp(ctx, app, in, 10*time.Minute, false); err != nil {
		return err
	}
	r.printf("chaos: verify --input %s --output %s (read_committed)", in, out)
	rep, err := verify.Outcomes(ctx, r.brokers, verify.Spec{Inputs: []string{in}, Outputs: []string{out}})
	if err != nil {
		return fmt.Errorf("scenario: verify: %w", err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	r.report("verify.json", b)
	outs, err := verify.ReadAll(ctx, r.brokers, out)
	if err != nil {
		return fmt.Errorf("scenario: read %s: %w", out, err)
	}
	distinct := map[string]bool{}
	for _, o := range outs {
		distinct[string(o.Value)] = true
	}
	r.printf("chaos: read_committed: %d records, %d distinct values (input %d)", len(outs), len(distinct), records)
	stopAll(reps)
	if !rep.OK || len(outs) != records || len(distinct) != records {
		return ErrCheckFailed
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
