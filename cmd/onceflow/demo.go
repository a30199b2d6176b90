package main

import (
	"encoding/json"
	"fmt"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/demo"
	kit "github.com/onceflow/onceflow/internal/cli"
)

// DemoCmd is `onceflow demo`.
type DemoCmd struct {
	Records  int     `name:"records" default:"100000" help:"Records to write."`
	Replicas int     `name:"replicas" default:"3" help:"Replicas to run (one is killed and restarted)."`
	Rate     float64 `name:"rate" help:"Input records per second (default: the records over 20 s, at least 1000/s)."`
	KeepLogs bool    `name:"keep-logs" help:"Keep the replicas' logs (the run's directory is removed otherwise)."`
	JSON     bool    `name:"json" help:"Print the result as one JSON object."`
	PG       string  `name:"pg" env:"ONCEFLOW_PG_DSN" placeholder:"DSN" help:"PostgreSQL for the rows sink (a schema of the run's own, dropped at the end); without it, or unreachable, the demo runs without that sink."`
}

// Run runs the demo; exit 0 only when exactly-once held.
func (c *DemoCmd) Run(env *Env) error {
	res, err := demo.Run(env.Ctx, demo.Config{Records: c.Records, Replicas: c.Replicas, Rate: c.Rate, KeepLogs: c.KeepLogs,
		PG: c.PG, Progress: env.Stderr, PlainProgress: !kit.IsTerminal(env.Stderr), Logger: env.Logger})
	if err != nil {
		return err
	}
	if c.JSON {
		enc := json.NewEncoder(env.Stdout)
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		verdict := "EXACTLY-ONCE HELD: every input accounted for once, rejections as injected, totals equal the truth, one effect per accepted event at every sink"
		rows := "not used (no PostgreSQL reachable: --pg or ONCEFLOW_PG_DSN)"
		if res.Postgres {
			rows = fmt.Sprintf("%d rows", res.PostgresRows)
		}
		if !res.ExactlyOnce {
			verdict = "EXACTLY-ONCE VIOLATED"
		}
		fmt.Fprintf(env.Stdout, `
onceflow demo: orders topology (dedup, version gate, per-customer totals, external sinks),
%d replicas,
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
  sink effects          %d at the webhook receiver (%d requests; duplicate effects %d)
  postgres              %s
  restored              %d changelog records (%s)
  throughput            %.0f records/s (%.1f s, embedded broker)
%s
`, res.Replicas, res.Killed, res.KilledAt, res.KilledPartitions, res.KilledRecordsIn, res.InputAtKill, c.Records, res.TakeoverSeconds, res.RecordsIn, res.EventsAccepted, res.EventsUnique,
			res.DuplicatesRejected, res.DuplicatesInjected, res.ConflictsRejected, res.ConflictsInjected,
			res.StaleRejected, res.StaleInjected, res.Missing, res.Duplicates, res.Unexpected, res.TotalsMatch,
			res.SinkEffects, res.SinkRequests, res.SinkDuplicateEffects, rows,
			res.RestoredRecords, res.RestoredSummary(), res.RecordsPerSec, res.Seconds, verdict)
	}
	if !res.ExactlyOnce {
		return errCheckFailed
	}
	return nil
}
