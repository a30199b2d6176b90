package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

// poisonSize is the poison record's value: above the output topic's 1 MiB
// limit, below the input's 4 MiB.
const poisonSize = 2 << 20

// runPoison puts a poison record among ordinary ones: the input topic
// accepts records up to 4 MiB, the output and rejected topics the
// broker's default (1 MiB). Three `run copy` replicas start; the records
// are produced with one of 2 MiB in the middle, whose copy can never be
// produced. Expected: the poison record in <app>-rejected with reason
// too-large (cut to fit, with its lineage), every ordinary record in the
// output once (read_committed), and no replica restarting its session
// more than MaxSessions times.
func runPoison(ctx context.Context, r *run) error {
	app, in, out := "poison-"+r.id, "poison-in-"+r.id, "poison-out-"+r.id
	rejected := app + "-rejected"
	records := r.cfg.Records
	r.printf("brokers %s; logs in %s", r.brokers[0], r.dir)
	// The topic is created by the first record, with the raised limit.
	if err := r.produce(ctx, in, 1, 0, map[string]string{"max.message.bytes": fmt.Sprint(4 << 20)}); err != nil {
		return err
	}
	reps, err := r.startThree("", "run", "copy", "--app-id", app, "--input", in, "--output", out, "--guarantee", "exactly_once")
	if err != nil {
		return err
	}
	if err := readyWithin(ctx, 30*time.Second, reps...); err != nil {
		return err
	}
	half := records / 2
	for _, p := range []struct{ n, size int }{{half - 1, 0}, {1, poisonSize}, {records - half, 0}} {
		if err := r.produce(ctx, in, p.n, p.size, nil); err != nil {
			return err
		}
	}
	r.printf("produced %d ordinary records to %s with one of %d bytes after the first %d", records, in, poisonSize, half)
	if err := r.caughtUp(ctx, app, in, 10*time.Minute, false); err != nil {
		return err
	}
	c := &checks{r: r}

	r.printf("== verify --input %s --output %s --rejected %s (the poison record's outcome is its rejection)", in, out, rejected)
	rep, err := verify.Outcomes(ctx, r.brokers, verify.Spec{Inputs: []string{in}, Outputs: []string{out}, Rejected: rejected})
	if err != nil {
		return fmt.Errorf("scenario: verify: %w", err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	r.report("verify.json", b)
	c.check(fmt.Sprintf("verify: input %d, output %d, 1 rejected only, 0 missing, 0 doubled, 0 unexpected", records+1, records),
		rep.Input == records+1 && rep.Output == records && rep.RejectedOnly == 1 && rep.Missing == 0 && rep.Doubled == 0 && rep.Unexpected == 0)

	r.printf("== read back, read_committed")
	poison, err := r.readPoison(ctx, in)
	if err != nil {
		return err
	}
	outs, err := verify.ReadAll(ctx, r.brokers, out)
	if err != nil {
		return fmt.Errorf("scenario: read %s: %w", out, err)
	}
	distinct := map[string]bool{}
	for _, o := range outs {
		distinct[string(o.Value)] = true
	}
	r.printf("output: %d records, %d distinct values", len(outs), len(distinct))
	c.check(fmt.Sprintf("read_committed: %d output records, all distinct", records), len(outs) == records && len(distinct) == records)
	rejs, err := verify.ReadAll(ctx, r.brokers, rejected)
	if err != nil {
		return fmt.Errorf("scenario: read %s: %w", rejected, err)
	}
	for _, j := range rejs {
		r.printf("%d bytes; headers: %v", len(j.Value), j.Headers)
	}
	c.check("read_committed: one rejected record", len(rejs) == 1)
	var h map[string]string
	if len(rejs) > 0 {
		h = rejs[0].Headers
	}
	c.check("rejected: reason too-large", h[wire.HeaderRejectReason] == wire.ReasonTooLarge)
	c.check("rejected: lineage "+in+"/"+poison, h[wire.HeaderSource] == in+"/"+poison)
	c.check(fmt.Sprintf("rejected: truncated from %d bytes", poisonSize), regexp.MustCompile(fmt.Sprintf(`\bvalue=%d\b`, poisonSize)).MatchString(h[wire.HeaderRejectTruncated]))

	r.printf("== sessions per replica")
	for _, rep := range reps {
		s := metric(ctx, rep, rebalancesMetric)
		a := metric(ctx, rep, transactionsMetric, "outcome", "aborted")
		cm := metric(ctx, rep, transactionsMetric, "outcome", "committed")
		tl := metric(ctx, rep, rejectedMetric, "reason", wire.ReasonTooLarge)
		log, _ := os.ReadFile(rep.LogPath)
		started := len(regexp.MustCompile(`session started`).FindAll(log, -1))
		failed := len(regexp.MustCompile(`transaction failed`).FindAll(log, -1))
		r.printf("%s: log: %d sessions started, %d transactions failed; metrics: %d sessions, %d committed, %d aborted, %d rejected too-large",
			rep.Name, started, failed, s, cm, a, tl)
		c.check(fmt.Sprintf("%s: at most %d sessions, no failed transaction", rep.Name, r.cfg.MaxSessions), started <= r.cfg.MaxSessions && failed == 0)
	}
	return c.err()
}

// readPoison finds the input record above poisonSize - 4096 bytes and
// returns its partition/offset.
func (r *run) readPoison(ctx context.Context, topic string) (string, error) {
	recs, err := verify.ReadAll(ctx, r.brokers, topic)
	if err != nil {
		return "", fmt.Errorf("scenario: read %s: %w", topic, err)
	}
	for _, rec := range recs {
		if len(rec.Value) > poisonSize-4096 {
			at := fmt.Sprintf("%d/%d", rec.Partition, rec.Offset)
			r.printf("poison record: %s/%s", topic, at)
			return at, nil
		}
	}
	return "", fmt.Errorf("scenario: no record of %d bytes in %s", poisonSize, topic)
}

// produce writes n generated records to topic (6 partitions when it is
// created, with the topic configs given), values padded to size bytes.
func (r *run) produce(ctx context.Context, topic string, n, size int, configs map[string]string) error {
	_, err := gen.Produce(ctx, gen.Config{Brokers: r.brokers, Topic: topic, Records: n, Partitions: 6, ValueSize: size,
		TopicConfigs: configs, Logger: r.cfg.Logger.Named("producer")})
	if err != nil {
		return fmt.Errorf("scenario: produce to %s: %w", topic, err)
	}
	return nil
}
