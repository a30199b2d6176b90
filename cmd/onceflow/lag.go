package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/internal/tooling/verify"
)

// LagCmd is `onceflow lag`.
type LagCmd struct {
	ToolFlags `embed:""`

	Group string        `name:"group" short:"g" required:"" help:"Consumer group (a topology's --app-id)."`
	Topic string        `name:"topic" short:"t" required:"" help:"Input topic."`
	Wait  time.Duration `name:"wait" help:"Wait up to this long until the group has read every record below the topic's last stable offsets; exit 1 if it has not."`
	JSON  bool          `name:"json" help:"Print the result as a JSON object."`
}

// Run prints the group's committed progress through the topic: its
// committed offsets against the last stable offsets, and the records it
// has not read (transaction markers and aborted records not counted).
func (c *LagCmd) Run(env *Env) error {
	opts, err := c.ClientOptions()
	if err != nil {
		return err
	}
	var p verify.Progress
	start := time.Now()
	if c.Wait > 0 {
		ctx, cancel := context.WithTimeout(env.Ctx, c.Wait)
		defer cancel()
		p, err = verify.WaitCaughtUp(ctx, c.BrokerList(), c.Group, c.Topic, 50*time.Millisecond, nil, opts...)
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
	} else {
		p, err = verify.GroupProgress(env.Ctx, c.BrokerList(), c.Group, c.Topic, opts...)
	}
	if err != nil {
		return err
	}
	if p.NoGroup {
		return fmt.Errorf("%w: %q (no members, no committed offsets)", verify.ErrNoGroup, c.Group)
	}
	if c.JSON {
		b, _ := json.Marshal(struct {
			verify.Progress
			WaitedSeconds float64 `json:"waited_seconds"`
		}{p, time.Since(start).Seconds()})
		fmt.Fprintf(env.Stdout, "%s\n", b)
	} else {
		fmt.Fprintf(env.Stdout, "group %s on %s: committed %d of %d, lag %s%d%s\n", p.Group, p.Topic, p.Committed, p.Stable, atMost(p.Estimated), p.Lag, openNote(p))
	}
	if c.Wait > 0 && p.Lag > 0 {
		return errCheckFailed
	}
	return nil
}

// atMost prefixes a lag counted in offsets (markers included).
func atMost(estimated bool) string {
	if estimated {
		return "at most "
	}
	return ""
}

// openNote mentions the offsets of transactions still open, which no
// read_committed consumer can read yet.
func openNote(p verify.Progress) string {
	if p.End > p.Stable {
		return fmt.Sprintf(" (%d offsets in open transactions)", p.End-p.Stable)
	}
	return ""
}
