package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/reset"
	"github.com/onceflow/onceflow/internal/statedir"
)

func TestResetCommand(t *testing.T) {
	resetScenario(t, startBroker(t), "")
}

// resetScenario drives onceflow reset on brokers, with topic and group
// names prefixed by prefix: a dry run changes nothing; a member in the
// group or a process holding the state dir is refused; a reset moves the
// input offsets, deletes the repartition and changelog topics with the
// group's offsets on them, keeps the rejected, outbox, dead-letter and
// ledger topics, and empties the state dir; and a reset cut short
// (everything done but the input offsets) is finished by running it again.
func resetScenario(t *testing.T, brokers, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	app, in := prefix+"shop", prefix+"orders"
	repart, changelog := app+"-bykey-repartition", app+"-totals-changelog"
	kept := []string{app + "-rejected", app + "-sink-hook", app + "-sink-hook-dlq", app + "-sink-hook-ledger-changelog"}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, tp := range append([]string{in, repart, changelog}, kept...) {
		if _, err := adm.CreateTopic(ctx, 2, -1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: in, Partition: int32(i % 2), Value: []byte("v")}, &kgo.Record{Topic: repart, Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	committed := kadm.Offsets{}
	for p := range int32(2) {
		committed.Add(kadm.Offset{Topic: in, Partition: p, At: 10, LeaderEpoch: -1})
		committed.Add(kadm.Offset{Topic: repart, Partition: p, At: 7, LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(ctx, app, committed); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "000001.sst"), []byte("state"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sinks"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"reset", "-b", brokers, "--app-id", app, "--state-dir", dir}

	// A dry run prints the plan and changes nothing.
	code, stdout, stderr := cli(t, ctx, append(args, "--dry-run")...)
	if code != exitOK {
		t.Fatalf("dry run: exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"dry run: would reset application " + app, "input offset " + in + "/0: 10 -> 0", "delete topic " + repart,
		"delete topic " + changelog, "drop committed offsets on " + repart, "keep topic " + app + "-sink-hook (outbox", "wipe state dir " + dir + " (2 entries)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, stdout)
		}
	}
	if got := groupOffsets(t, ctx, adm, app); got[in] != 20 || got[repart] != 14 {
		t.Fatalf("dry run changed offsets: %v", got)
	}
	if !topicsExist(t, ctx, adm, repart, changelog) {
		t.Fatal("dry run deleted topics")
	}

	// A member in the group: refused, nothing changed.
	member, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumerGroup(app), kgo.ConsumeTopics(in))
	if err != nil {
		t.Fatal(err)
	}
	for len(groupMembers(t, ctx, adm, app)) == 0 {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		member.PollRecords(pctx, 1) // joins the group
		pcancel()
		if ctx.Err() != nil {
			t.Fatal("member never joined")
		}
	}
	code, _, stderr = cli(t, ctx, args...)
	if code != exitError || !strings.Contains(stderr, "onceflow reset: the application is running: group \""+app+"\"") {
		t.Errorf("with a member: exit %d, stderr %q", code, stderr)
	}
	member.Close() // leaves the group
	if !topicsExist(t, ctx, adm, repart, changelog) {
		t.Fatal("a refused reset deleted topics")
	}

	// A process holding the state dir (a replica still running here, that
	// the group may no longer list): refused with its pid.
	lock, err := statedir.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, ctx, args...)
	lock.Release()
	if code != exitError || !strings.Contains(stderr, fmt.Sprintf("onceflow reset: state dir in use by another process (pid %d)", os.Getpid())) {
		t.Errorf("with the state dir held: exit %d, stderr %q", code, stderr)
	}

	// A reset cut short while it deleted topics (state wiped, offsets on
	// the repartition topic dropped, that topic deleted, the changelog not
	// yet, the input offsets not moved): running it again finishes the job.
	if err := os.RemoveAll(filepath.Join(dir, "sinks")); err != nil {
		t.Fatal(err)
	}
	drop := kadm.TopicsSet{}
	drop.Add(repart, 0, 1)
	if _, err := adm.DeleteOffsets(ctx, app, drop); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopics(ctx, repart); err != nil {
		t.Fatal(err)
	}
	if err := reset.AwaitGone(ctx, adm, []string{repart}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := reset.Run(ctx, reset.Config{Brokers: strings.Split(brokers, ","), AppID: app, Inputs: []string{prefix + "no-such-topic"}, To: "earliest", StateDir: dir}, &strings.Builder{}); err == nil {
		t.Fatal("a reset naming a missing input topic succeeded")
	}
	if !topicsExist(t, ctx, adm, changelog) {
		t.Fatal("a reset that failed its plan deleted topics")
	}
	code, stdout, stderr = cli(t, ctx, append(args, "--json")...)
	var plan reset.Plan
	if code != exitOK || json.Unmarshal([]byte(stdout), &plan) != nil {
		t.Fatalf("reset: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !slices.Equal(plan.Delete, []string{changelog}) || len(plan.Moves) != 2 || plan.Moves[1].From != 10 || plan.Moves[1].To != 0 {
		t.Errorf("plan of the reset run again: %+v", plan)
	}
	if got := groupOffsets(t, ctx, adm, app); got[in] != 0 || got[repart] != 0 || len(got) != 1 {
		t.Errorf("offsets after reset: %v, want %s at 0 on each partition and none on %s", got, in, repart)
	}
	if topicsExist(t, ctx, adm, repart) || topicsExist(t, ctx, adm, changelog) {
		t.Error("internal topics still exist after reset")
	}
	if !topicsExist(t, ctx, adm, kept...) {
		t.Errorf("kept topics %v were deleted", kept)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != statedir.LockFile {
		t.Errorf("state dir after reset holds %v", entries)
	}
	// Run again (as after a crash in the middle): nothing left to delete,
	// the offsets move again (to latest now), success.
	code, stdout, stderr = cli(t, ctx, append(args, "--to", "latest")...)
	if code != exitOK || !strings.Contains(stdout, "input offset "+in+"/1: 0 -> 10") || strings.Contains(stdout, "delete topic") ||
		!strings.Contains(stdout, "reset of "+app+" complete") {
		t.Errorf("second reset: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if got := groupOffsets(t, ctx, adm, app); got[in] != 20 {
		t.Errorf("offsets after reset to latest: %v", got)
	}
}

// groupOffsets sums the group's committed offsets per topic.
func groupOffsets(t *testing.T, ctx context.Context, adm *kadm.Client, group string) map[string]int64 {
	t.Helper()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	sum := map[string]int64{}
	os.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			sum[o.Topic] += o.At
		}
	})
	return sum
}

func groupMembers(t *testing.T, ctx context.Context, adm *kadm.Client, group string) []kadm.DescribedGroupMember {
	t.Helper()
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	return dgs[group].Members
}

// topicsExist reports whether metadata lists every one of topics.
func topicsExist(t *testing.T, ctx context.Context, adm *kadm.Client, topics ...string) bool {
	t.Helper()
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return !slices.ContainsFunc(topics, func(tp string) bool { return !tds.Has(tp) })
}
