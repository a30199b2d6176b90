package main

import (
	"encoding/json"
	"fmt"

	"github.com/onceflow/onceflow/internal/demo"
)

// DemoCmd is `onceflow demo`.
type DemoCmd struct {
	Records  int  `name:"records" default:"100000" help:"Records to write."`
	Replicas int  `name:"replicas" default:"3" help:"Replicas to run (one is killed and restarted)."`
	JSON     bool `name:"json" help:"Print the result as one JSON object."`
}

// Run runs the demo; exit 0 only when exactly-once held.
func (c *DemoCmd) Run(env *Env) error {
	res, err := demo.Run(env.Ctx, demo.Config{Records: c.Records, Replicas: c.Replicas, Progress: env.Stderr, Logger: env.Logger})
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
%s killed with SIGKILL at %d records and restarted on its own state
  records in            %d
  accepted (outputs)    %d   (unique events %d)
  duplicates rejected   %d of %d injected
  conflicts rejected    %d of %d injected
  stale rejected        %d of %d injected
  missing               %d
  duplicated            %d
  unexpected            %d
  totals match truth    %t
  restored on restart   %d changelog records
  throughput            %.0f records/s (%.1f s, embedded broker)
%s
`, res.Replicas, res.Killed, res.KilledAt, res.RecordsIn, res.EventsAccepted, res.EventsUnique,
			res.DuplicatesRejected, res.DuplicatesInjected, res.ConflictsRejected, res.ConflictsInjected,
			res.StaleRejected, res.StaleInjected, res.Missing, res.Duplicates, res.Unexpected, res.TotalsMatch,
			res.RestoredRecords, res.RecordsPerSec, res.Seconds, verdict)
	}
	if !res.ExactlyOnce {
		return errCheckFailed
	}
	return nil
}
