package topology_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/sinks"
	"github.com/onceflow/onceflow/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// everyKind has a gate, a repartition topic, a through topic, stores and
// an external sink: every kind of node and topic a diagram shows.
func everyKind() *topology.Topology {
	tp := topology.New("every-kind")
	in := topology.Source(tp, "events", serde.String(), serde.Int64())
	fresh := topology.Dedup(in, "seen", topology.EventIDHeader("event-id"), time.Hour)
	byValue := topology.Map(fresh, func(k string, v int64) (string, int64, error) { return k + "!", v, nil })
	parted := topology.Repartition(byValue, "by-value", serde.String(), serde.Int64())
	counts := topology.Count(parted, "counts", serde.String())
	back := topology.Through(counts, "counts-copy", serde.String(), serde.Int64())
	topology.To(back, "counts-out", serde.String(), serde.Int64())
	none := sinks.Func(func(context.Context, sinks.Delivery) error { return nil })
	topology.ToSink(fresh, "mail", none, serde.Int64(), func(k string, _ int64) string { return k })
	return tp
}

// Describe and DescribeMermaid of a topology with every kind of node match
// their golden files (go test ./topology -run TestDescribeGolden -update
// rewrites them).
func TestDescribeGolden(t *testing.T) {
	tp := everyKind()
	for file, got := range map[string]string{"every-kind.txt": tp.Describe(), "every-kind.mmd": tp.DescribeMermaid()} {
		path := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs:\n--- got\n%s--- want\n%s", file, got, want)
		}
	}
}
