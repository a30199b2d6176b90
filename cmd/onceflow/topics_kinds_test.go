package main

import (
	"context"
	"regexp"
	"testing"
	"time"
)

// topics list marks an application's outbox, dead-letter and ledger
// topics beside its repartition, changelog and rejected ones; a user's
// topic with "-sink-" in its name is not taken for an outbox.
func TestTopicsListMarksSinkTopics(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tp := range []string{"shop-sink-hook", "shop-sink-hook-dlq", "shop-sink-hook-ledger-changelog", "shop-totals-changelog", "my-sink-data"} {
		if code, _, stderr := cli(t, ctx, "topics", "create", "-b", brokers, tp); code != exitOK {
			t.Fatalf("create %s: %s", tp, stderr)
		}
	}
	code, stdout, stderr := cli(t, ctx, "topics", "list", "-b", brokers)
	if code != exitOK {
		t.Fatalf("list: exit %d, stderr %q", code, stderr)
	}
	for _, re := range []string{
		`(?m)^shop-sink-hook\s+1\s+1\s+outbox$`,
		`(?m)^shop-sink-hook-dlq\s+1\s+1\s+dead-letter$`,
		`(?m)^shop-sink-hook-ledger-changelog\s+1\s+1\s+ledger$`,
		`(?m)^shop-totals-changelog\s+1\s+1\s+changelog$`,
		`(?m)^my-sink-data\s+1\s+1\s+-$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("list output lacks %s:\n%s", re, stdout)
		}
	}
}
