package main

import (
	"encoding/json"
	"fmt"

	"github.com/onceflow/onceflow/internal/demo"
)

// DemoCmd is `onceflow demo`.
type DemoCmd struct {
	Records  int     `name:"records" default:"100000" help:"Records to write."`
	Replicas int     `name:"replicas" default:"3" help:"Replicas to run (one is killed and restarted)."`
	Rate     float64 `name:"rate" help:"Input records per second (default: the records over 20 s, at least 1000/s)."`
	KeepLogs bool    `name:"keep-logs" help:"Keep the replicas' logs (the run's directory is removed otherwise)."`
	JSON     bool    `name:"json" help:"Print the result as one JSON object."`
}

// Run runs the demo; exit 0 only when exactly-once held.
func (c *DemoCmd) Run(env *Env) error {
	res, err := demo.Run(env.Ctx, demo.Config{Records: c.Records, Replicas: c.Replicas, Rate: c.Rate, KeepLogs: c.KeepLogs,
		Progress: env.Stderr, Logger: env.Logger})
	if err != nil {
		return err
	}
	if c.JSON {
		enc := json.NewEncoder(env.Stdout)
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		verdict := "EXACTLY-ONCE HELD: every input accounted for once, rejections as injected, totals equal the truth"
		if !res.ExactlyOnce {
			verdict = "EXACTLY-ONCE VIOLATED"
		}
		fmt.Fprintf(env.Stdout, `
onceflow demo: orders topology (dedup, version gate, per-customer totals), %d replicas,
%s killed with SIGKILL at %d committed records, while it owned %d partitions
(%d records processed) and input was still arriving (%d of %d written); the others took its
partitions over %.1f s later, then it was restarted on its own state
  records in            %d
  accepted (outputs)    %d   (unique events %d)
  duplicates rejected   %d of %d injected
  conflicts rejected    %d of %d injected
  stale rejected        %d of %d injected
  missing               %d
  duplicated            %d
  unexpected            %d
  totals match truth    %t
  restored              %d changelog records (%s)
  throughput            %.0f records/s (%.1f s, embedded broker)
%s
`, res.Replicas, res.Killed, res.KilledAt, res.KilledPartitions, res.KilledRecordsIn, res.InputAtKill, c.Records, res.TakeoverSeconds, res.RecordsIn, res.EventsAccepted, res.EventsUnique,
			res.DuplicatesRejected, res.DuplicatesInjected, res.ConflictsRejected, res.ConflictsInjected,
			res.StaleRejected, res.StaleInjected, res.Missing, res.Duplicates, res.Unexpected, res.TotalsMatch,
			res.RestoredRecords, res.RestoredSummary(), res.RecordsPerSec, res.Seconds, verdict)
	}
	if !res.ExactlyOnce {
		return errCheckFailed
	}
	return nil
}
