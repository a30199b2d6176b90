package benchmarks

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/examples/pageviews"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/topology"
)

// pageviewsWorkload: views per user per hour with 5 minutes of grace,
// final results only (examples/pageviews), on the pageviews generator's
// views (5 % out of order within grace, 1 % beyond it, a record per
// partition that closes the last windows). The truth depends on how the
// views spread over partitions, so the input is planned for the run's
// partition count. It has no latency runs: a final result waits for its
// hour to close in event time, so the delay from a view to its window's
// result says nothing about the processor.
type pageviewsWorkload struct{}

func (pageviewsWorkload) Name() string      { return "pageviews" }
func (pageviewsWorkload) SizedValues() bool { return false }
func (pageviewsWorkload) ThroughputOnly()   {}

func (w pageviewsWorkload) Input(records, valueSize int) (Input, error) {
	return w.InputFor(records, valueSize, DefaultPartitions)
}

// InputFor plans the views for a topic of partitions partitions.
func (pageviewsWorkload) InputFor(records, _ int, partitions int) (Input, error) {
	if records <= 0 {
		return nil, fmt.Errorf("bench: pageviews input: %d records", records)
	}
	plan, truth := gen.PlanPageviews(gen.PageviewsConfig{Events: records, Seed: 1}, partitions)
	return pageviewsInput{plan: plan, truth: truth}, nil
}

func (pageviewsWorkload) Topology(input, output string) *topology.Topology {
	return pageviews.Topology(input, output)
}

// WarmupRecord is a view of a user of its own (unused: no latency runs).
func (pageviewsWorkload) WarmupRecord(partition int) *kgo.Record {
	user := fmt.Sprintf("warmup-%d", partition)
	return gen.PlannedView{Key: user, Value: pageviews.View{User: user, Page: "/", At: 0}}.Record("")
}

func (pageviewsWorkload) Peers() []Variant {
	return []Variant{kstreamsVariant{exactlyOnce: true}, kstreamsVariant{}}
}

// Check: one final count per user and hour of the truth.
func (pageviewsWorkload) Check(in Input, out Output, exactlyOnce bool) error {
	pi, ok := in.(pageviewsInput)
	if !ok {
		return fmt.Errorf("bench: pageviews check got a %T input", in)
	}
	return checkCount(int64(len(pi.truth.Windows)), out.Records, exactlyOnce)
}

type pageviewsInput struct {
	plan  []gen.PlannedView
	truth gen.PageviewsTruth
}

func (p pageviewsInput) Len() int { return len(p.plan) }

func (p pageviewsInput) Record(i int) *kgo.Record {
	r := p.plan[i].Record("")
	r.Timestamp = time.Time{} // the writer stamps it; the event time is the value's "at"
	return r
}

// partitionedWorkload is a workload whose input depends on the input
// topic's partition count.
type partitionedWorkload interface {
	InputFor(records, valueSize, partitions int) (Input, error)
}

// inputOf returns a workload's input for a run on partitions partitions.
func inputOf(wl Workload, records, valueSize, partitions int) (Input, error) {
	if pw, ok := wl.(partitionedWorkload); ok {
		return pw.InputFor(records, valueSize, partitions)
	}
	return wl.Input(records, valueSize)
}

// throughputOnly reports whether a workload has no latency runs.
func throughputOnly(wl Workload) bool {
	_, ok := wl.(interface{ ThroughputOnly() })
	return ok
}
