package groups_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/groups"
	"github.com/onceflow/onceflow/internal/graph"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// A running replica's group: every partition committed to its end and
// owned by the replica's instance, the replica's tasks; once it has left,
// the committed offsets remain and no one owns them; a group that never
// was is an error.
func TestDescribe(t *testing.T) {
	e := enginetest.New(t)
	in, out, app := e.Name("in"), e.Name("out"), e.Name("app")
	e.CreateTopic(in, 2)
	e.CreateTopic(out, 2)
	e.Produce(in, 0, 40)
	tp := topology.New("copy")
	topology.To(topology.Source(tp, in, serde.Bytes(), serde.Bytes()), out, serde.Bytes(), serde.Bytes())
	g, err := graph.Compile(tp)
	if err != nil {
		t.Fatal(err)
	}
	r := e.Start(e.Config(app, "r1"), g.WithPrefix(app))
	e.WaitCount(out, 40, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var d groups.Description
	deadline := time.Now().Add(30 * time.Second)
	for {
		if d, err = groups.Describe(ctx, e.Brokers, app); err != nil {
			t.Fatal(err)
		}
		if caughtUp(d) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var text bytes.Buffer
	if err := d.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("running:\n%s", text.String())
	if len(d.Members) != 1 || d.Members[0].Instance != "r1" || strings.Join(d.Members[0].Tasks, ",") != "0_0,0_1" ||
		strings.Join(d.Members[0].Partitions, ",") != in+"/0,"+in+"/1" {
		t.Fatalf("members %+v", d.Members)
	}
	if len(d.Partitions) != 2 || !caughtUp(d) {
		t.Fatalf("partitions %+v", d.Partitions)
	}
	for _, p := range d.Partitions {
		if p.Instance != "r1" || p.Member != d.Members[0].Member || p.Topic != in {
			t.Errorf("partition %+v", p)
		}
	}

	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if d, err = groups.Describe(ctx, e.Brokers, app); err != nil {
		t.Fatal(err)
	}
	if len(d.Members) != 0 || len(d.Partitions) != 2 || d.Partitions[0].Instance != "" || d.Partitions[0].Committed < 0 {
		t.Fatalf("after the replica left: %+v", d)
	}
	if _, err := groups.Describe(ctx, e.Brokers, e.Name("never")); !errors.Is(err, groups.ErrNoGroup) {
		t.Fatalf("a group that never was: %v", err)
	}
}

// caughtUp reports whether every partition has a committed offset and no
// lag.
func caughtUp(d groups.Description) bool {
	for _, p := range d.Partitions {
		if p.Committed < 0 || p.Lag != 0 {
			return false
		}
	}
	return len(d.Partitions) > 0
}
