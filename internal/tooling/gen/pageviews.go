package gen

// The pageviews example's input: views of users, in event-time order with
// some out of order within the grace period and some beyond it, and the
// truth a correct pageviews topology outputs for them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/examples/pageviews"
	"github.com/onceflow/onceflow/internal/wire"
)

// Defaults of PageviewsConfig.
const (
	DefaultPageviewUsers      = 200
	DefaultPageviewStep       = 200 * time.Millisecond
	DefaultPageviewOutOfOrder = 0.05
	DefaultPageviewLate       = 0.01
)

// PageviewsConfig configures one run of the pageviews generator.
type PageviewsConfig struct {
	// Brokers, ClientOptions and Topic say where to write; the topic is
	// created with Partitions (default 6) when missing and must be empty.
	Brokers       []string
	ClientOptions []kgo.Opt
	Topic         string
	Partitions    int
	// Events is how many views to write (the records that close the last
	// windows come on top, one per partition). Required.
	Events int
	// Users is how many users (record keys) the views spread over.
	// Default 200.
	Users int
	// Step is the event time between two consecutive views. Default
	// 200 ms.
	Step time.Duration
	// Start is the event time of the first view. Default: so that the
	// last one is three hours before the wall clock, on a whole hour.
	Start time.Time
	// OutOfOrderRate is the fraction of views moved back by less than the
	// grace period: out of order, still counted. LateRate is the fraction
	// moved back two to three hours: beyond grace, rejected as late.
	// Negative: none; zero: the defaults, 5 % and 1 %.
	OutOfOrderRate, LateRate float64
	// Seed seeds the plan: the same configuration writes the same records.
	Seed int64
	// Rate paces the writes to this many records per second. Default 0:
	// as fast as the broker takes them.
	Rate     float64
	Progress io.Writer
	Logger   hclog.Logger
}

func (c PageviewsConfig) withDefaults() PageviewsConfig {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Users == 0 {
		c.Users = DefaultPageviewUsers
	}
	if c.Step == 0 {
		c.Step = DefaultPageviewStep
	}
	if c.OutOfOrderRate == 0 {
		c.OutOfOrderRate = DefaultPageviewOutOfOrder
	}
	if c.LateRate == 0 {
		c.LateRate = DefaultPageviewLate
	}
	c.OutOfOrderRate, c.LateRate = max(c.OutOfOrderRate, 0), max(c.LateRate, 0)
	if c.Start.IsZero() {
		span := time.Duration(c.Events) * c.Step
		c.Start = time.Now().Add(-span - 3*time.Hour).Truncate(time.Hour)
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Validate reports every problem with the configuration at once.
func (c PageviewsConfig) Validate() error {
	errs := validTarget(c.Brokers, c.Topic)
	if c.Events <= 0 || c.Events > 100_000_000 {
		errs = append(errs, fmt.Errorf("gen: events must be from 1 to 100000000, got %d", c.Events))
	}
	if c.Users < 0 || c.Users > 1_000_000 {
		errs = append(errs, fmt.Errorf("gen: users must be from 1 to 1000000 (0: default %d), got %d", DefaultPageviewUsers, c.Users))
	}
	if c.Step < 0 || c.Step%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("gen: step must be a whole number of milliseconds, got %v", c.Step))
	}
	if c.Partitions < 0 || c.Partitions > 10000 {
		errs = append(errs, fmt.Errorf("gen: partitions must be from 1 to 10000, got %d", c.Partitions))
	}
	if c.OutOfOrderRate+c.LateRate > 0.5 || math.IsNaN(c.OutOfOrderRate+c.LateRate) {
		errs = append(errs, fmt.Errorf("gen: out-of-order rate + late rate must be at most 0.5, got %v", c.OutOfOrderRate+c.LateRate))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("gen: rate must not be negative, got %v", c.Rate))
	}
	return errors.Join(errs...)
}

// PageviewsTruth is what a correct pageviews topology outputs for the
// records of one run: one final count per user and hour in Windows, keyed
// "<user>@<hour start, ms since the epoch>", and Late records rejected with
// reason late. The Flush records (one per partition, two hours after the
// last view) close every window of the views; their own windows stay open
// and are not in Windows.
type PageviewsTruth struct {
	Topic      string           `json:"topic"`
	Partitions int              `json:"partitions"`
	Seed       int64            `json:"seed"`
	Users      int              `json:"users"`
	Events     int              `json:"events"`
	OutOfOrder int              `json:"out_of_order"`
	Late       int              `json:"late"`
	Flush      []string         `json:"flush"`
	Windows    map[string]int64 `json:"windows"`
}

// WindowKey is the key of a window in PageviewsTruth.Windows.
func WindowKey(user string, start time.Time) string {
	return fmt.Sprintf("%s@%d", user, start.UnixMilli())
}

// WriteFile writes the truth as JSON.
func (t PageviewsTruth) WriteFile(path string) error {
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("gen: truth: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("gen: write truth: %w", err)
	}
	return nil
}

// ReadPageviewsTruth reads a truth file WriteFile wrote.
func ReadPageviewsTruth(path string) (PageviewsTruth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PageviewsTruth{}, fmt.Errorf("gen: read truth: %w", err)
	}
	var t PageviewsTruth
	if err := json.Unmarshal(b, &t); err != nil {
		return PageviewsTruth{}, fmt.Errorf("gen: truth file %s: %w", path, err)
	}
	if t.Windows == nil || t.Partitions <= 0 {
		return PageviewsTruth{}, fmt.Errorf("gen: truth file %s is not a pageviews truth", path)
	}
	return t, nil
}

// PlannedView is one record of the plan.
type PlannedView struct {
	Key   string
	Value pageviews.View
}

// Record is the view as a record: keyed by user, stamped with its event
// time.
func (v PlannedView) Record(topic string) *kgo.Record {
	b, _ := json.Marshal(v.Value) // a struct of strings and an int
	return &kgo.Record{Topic: topic, Key: []byte(v.Key), Value: b, Timestamp: time.UnixMilli(v.Value.At)}
}

// PlanPageviews plans cfg's views for a topic of partitions partitions and
// computes the truth by simulating, per partition, the window stage's
// stream time: a view is late when its hour's end plus grace is at or
// before the largest event time its partition has seen.
func PlanPageviews(cfg PageviewsConfig, partitions int) ([]PlannedView, PageviewsTruth) {
	cfg = cfg.withDefaults()
	r := newRNG(cfg.Seed)
	truth := PageviewsTruth{Topic: cfg.Topic, Partitions: partitions, Seed: cfg.Seed, Users: cfg.Users, Events: cfg.Events, Windows: map[string]int64{}}
	streamTime := make([]int64, partitions)
	for i := range streamTime {
		streamTime[i] = math.MinInt64
	}
	window, grace := pageviews.Window.Milliseconds(), pageviews.Grace.Milliseconds()
	plan := make([]PlannedView, 0, cfg.Events+partitions)
	observe := func(key string, at int64) bool { // false: late
		p := wire.Partition([]byte(key), 0, int32(partitions))
		start := at - ((at%window)+window)%window
		if start+window+grace <= streamTime[p] {
			return false
		}
		streamTime[p] = max(streamTime[p], at)
		return true
	}
	start := cfg.Start.UnixMilli()
	var last int64
	for i := range cfg.Events {
		user := fmt.Sprintf("user-%05d", r.intn(cfg.Users))
		at := start + int64(i)*cfg.Step.Milliseconds()
		last = max(last, at)
		shifted := false
		switch f := r.float64(); {
		case f < cfg.LateRate:
			at -= 2*window + int64(r.intn(int(window)))
			shifted = true
		case f < cfg.LateRate+cfg.OutOfOrderRate:
			at -= 1 + int64(r.intn(int(grace-1)))
			shifted = true
		}
		v := PlannedView{Key: user, Value: pageviews.View{User: user, Page: fmt.Sprintf("/p/%d", r.intn(100)), At: at}}
		plan = append(plan, v)
		switch {
		case !observe(user, at):
			truth.Late++
		default:
			if shifted {
				truth.OutOfOrder++
			}
			truth.Windows[WindowKey(user, time.UnixMilli(at-((at%window)+window)%window))]++
		}
	}
	// One record per partition, two hours after the last view, closes
	// every window of the views.
	for p, n := 0, 0; p < partitions; n++ {
		key := fmt.Sprintf("~flush-%d", n)
		if int(wire.Partition([]byte(key), 0, int32(partitions))) != p {
			continue
		}
		plan = append(plan, PlannedView{Key: key, Value: pageviews.View{User: key, Page: "/", At: last + 2*window}})
		truth.Flush = append(truth.Flush, key)
		p++
	}
	return plan, truth
}

// ProducePageviews writes cfg's views (PlanPageviews) in plan order with
// the idempotent producer (kgo's default partitioner hashes the user with
// murmur2, as the truth's simulation does) and returns the truth.
func ProducePageviews(ctx context.Context, cfg PageviewsConfig) (PageviewsTruth, error) {
	if err := cfg.Validate(); err != nil {
		return PageviewsTruth{}, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger.Named("gen").With("topic", cfg.Topic, "example", "pageviews")
	// No RecordDeliveryTimeout: kgo measures it from the record's
	// timestamp, which is the view's event time, hours in the past.
	cl, partitions, err := openEmptyTopic(ctx, cfg.Brokers, cfg.Topic, cfg.Partitions, cfg.Logger, log, cfg.ClientOptions)
	if err != nil {
		return PageviewsTruth{}, err
	}
	defer cl.Close()
	plan, truth := PlanPageviews(cfg, partitions)
	log.Info("producing", "views", cfg.Events, "users", cfg.Users, "partitions", partitions,
		"out_of_order", truth.OutOfOrder, "late", truth.Late, "windows", len(truth.Windows), "seed", cfg.Seed)
	var (
		acked    atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			errOnce.Do(func() { firstErr = err; cancel() })
			return
		}
		acked.Add(1)
	}
	stopBar := startProgress(cfg.Progress, len(plan), &acked)
	began := time.Now()
	for i, v := range plan {
		if pctx.Err() != nil {
			break
		}
		if cfg.Rate > 0 && i%100 == 0 {
			pace(pctx, began, i, cfg.Rate)
		}
		cl.Produce(pctx, v.Record(cfg.Topic), promise)
	}
	flushErr := cl.Flush(ctx)
	n := int(acked.Load())
	stopBar(n)
	errOnce.Do(func() {})
	switch {
	case firstErr != nil:
		return PageviewsTruth{}, fmt.Errorf("gen: %d of %d records acknowledged: %w", n, len(plan), firstErr)
	case ctx.Err() != nil:
		return PageviewsTruth{}, fmt.Errorf("gen: %d of %d records acknowledged: %w", n, len(plan), ctx.Err())
	case flushErr != nil:
		return PageviewsTruth{}, fmt.Errorf("gen: flush: %w", flushErr)
	case n != len(plan):
		return PageviewsTruth{}, fmt.Errorf("gen: %d of %d records acknowledged", n, len(plan))
	}
	log.Info("produced", "records", n, "duration", time.Since(began).Round(time.Millisecond))
	return truth, nil
}
