package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/groups"
)

// onceflow groups describe shows a group's committed offsets and lag per
// partition; a group that does not exist is an error (exit 2).
func TestGroupsDescribeCommand(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code, _, stderr := cli(t, ctx, "produce", "-b", brokers, "-t", "in", "-n", "30", "--partitions", "2", "--no-progress"); code != 0 {
		t.Fatalf("produce: %s", stderr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "in", Partition: 0, At: 3})
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "g", offsets); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, ctx, "groups", "describe", "-b", brokers, "g", "--json")
	var d groups.Description
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != exitOK {
		t.Fatalf("groups describe: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if len(d.Partitions) != 2 || d.Partitions[0].Committed != 3 || d.Partitions[1].Committed != -1 ||
		d.Partitions[0].Lag+d.Partitions[1].Lag != 27 || len(d.Members) != 0 {
		t.Errorf("description %+v", d)
	}
	code, stdout, _ = cli(t, ctx, "groups", "describe", "-b", brokers, "g")
	if code != exitOK || !strings.Contains(stdout, "group g: Empty") || !strings.Contains(stdout, "COMMITTED") {
		t.Errorf("text: exit %d, stdout %q", code, stdout)
	}
	code, _, stderr = cli(t, ctx, "groups", "describe", "-b", brokers, "nope")
	if code != exitError || !strings.Contains(stderr, `onceflow groups describe: no such group: "nope"`) {
		t.Errorf("a missing group: exit %d, stderr %q", code, stderr)
	}
}
