package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTopicsDeleteCommand(t *testing.T) {
	topicsDeleteScenario(t, startBroker(t), "")
}

// topicsDeleteScenario: without --yes nothing is deleted; a user's topic
// is deleted; an application's internal topic is refused while its group
// has a member and deleted with --force; a missing topic is an error.
func topicsDeleteScenario(t *testing.T, brokers, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	app, user := prefix+"shop", prefix+"scratch"
	changelog, in := app+"-totals-changelog", prefix+"orders"
	for _, tp := range []string{user, changelog, in} {
		if code, _, stderr := cli(t, ctx, "topics", "create", "-b", brokers, tp); code != exitOK {
			t.Fatalf("create %s: %s", tp, stderr)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	code, _, stderr := cli(t, ctx, "topics", "delete", "-b", brokers, user)
	if code != exitError || !strings.Contains(stderr, "add --yes to confirm") || !topicsExist(t, ctx, adm, user) {
		t.Fatalf("without --yes: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := cli(t, ctx, "topics", "delete", "-b", brokers, user, "--yes")
	if code != exitOK || stdout != "deleted topic "+user+"\n" || topicsExist(t, ctx, adm, user) {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	member, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumerGroup(app), kgo.ConsumeTopics(in))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for len(groupMembers(t, ctx, adm, app)) == 0 {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		member.PollRecords(pctx, 1) // joins the group
		pcancel()
		if ctx.Err() != nil {
			t.Fatal("member never joined")
		}
	}
	code, _, stderr = cli(t, ctx, "topics", "delete", "-b", brokers, changelog, "--yes")
	if code != exitError || !strings.Contains(stderr, `onceflow topics delete: internal topic of a running application: "`+changelog+`" is a changelog topic of application "`+app+`"`) ||
		!topicsExist(t, ctx, adm, changelog) {
		t.Fatalf("internal topic of a running app: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = cli(t, ctx, "topics", "delete", "-b", brokers, changelog, "--yes", "--force")
	if code != exitOK || topicsExist(t, ctx, adm, changelog) {
		t.Fatalf("--force: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = cli(t, ctx, "topics", "delete", "-b", brokers, prefix+"nope", "--yes")
	if code != exitError || !strings.Contains(stderr, `onceflow topics delete: topic does not exist: "`+prefix+`nope"`) {
		t.Fatalf("missing topic: exit %d, stderr %q", code, stderr)
	}
}
