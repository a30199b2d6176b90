package gen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults of OrdersConfig and of `onceflow produce --example orders`.
const (
	// DefaultCustomers is the customer count when OrdersConfig.Customers
	// is zero.
	DefaultCustomers = 200
	// The injection rates `onceflow produce --example orders` uses when
	// its flags are absent. In OrdersConfig a zero rate means none.
	DefaultDuplicateRate  = 0.10
	DefaultConflictRate   = 0.01
	DefaultOutOfOrderRate = 0.05
)

// MaxOrdersEvents bounds OrdersConfig.Events: the plan is held in memory
// (about 40 bytes an event).
const MaxOrdersEvents = 100_000_000

// MaxInjected bounds DuplicateRate + ConflictRate + 2×OutOfOrderRate: every
// duplicate and conflict re-sends an earlier event, and every late version
// needs a pair of fresh versions of one order, so fresh events must remain.
const MaxInjected = 0.9

// ErrTopicNotEmpty is returned (wrapped) by ProduceOrders when the topic
// already holds records: a truth computed for the new records alone would
// not describe it. Not retryable; use a new topic.
var ErrTopicNotEmpty = errors.New("gen: topic is not empty")

// OrdersConfig configures one run of the orders generator.
type OrdersConfig struct {
	// Brokers are the seed brokers (host:port). Required.
	Brokers []string
	// ClientOptions are appended to the client's options (TLS, SASL:
	// clientcfg.Security.Options). Default nil.
	ClientOptions []kgo.Opt
	// Topic is the input topic; created when missing, and it must hold no
	// records. Required.
	Topic string
	// Events is how many records to write, injected ones included.
	// Required, from 1 to MaxOrdersEvents.
	Events int
	// Partitions is the partition count used when the topic is created
	// (an existing topic keeps its own). Default 6.
	Partitions int
	// Customers is how many customers (record keys) the events spread
	// over. Default 200.
	Customers int
	// DuplicateRate is the fraction of Events that re-send an earlier
	// record unchanged (same key, value and headers). Default 0: none.
	DuplicateRate float64
	// ConflictRate is the fraction of Events that re-send an earlier event
	// id with a different amount. Default 0: none.
	ConflictRate float64
	// OutOfOrderRate is the fraction of Events that arrive after a newer
	// version of their order and so are stale. Default 0: none. With few
	// events per customer there may be too few orders with two versions;
	// the plan then injects fewer, logs a warning, and the truth counts
	// what was injected.
	OutOfOrderRate float64
	// Seed seeds the plan: the same configuration writes the same records
	// (on any platform and Go version). Default 0, a seed like any other.
	Seed int64
	// Rate paces the writes to this many records per second, so input
	// keeps arriving while it is processed. Default 0: as fast as the
	// broker takes them.
	Rate float64
	// Progress receives a progress bar. Default nil: none.
	Progress io.Writer
	// Logger receives the run's log lines. Default nil: none.
	Logger hclog.Logger
}

// Validate reports every problem with the configuration at once.
func (c OrdersConfig) Validate() error {
	errs := validTarget(c.Brokers, c.Topic)
	if !(c.Rate >= 0) || math.IsInf(c.Rate, 1) {
		errs = append(errs, fmt.Errorf("gen: rate must be a finite number, not negative, got %v", c.Rate))
	}
	if c.Partitions < 0 || c.Partitions > 10000 {
		errs = append(errs, fmt.Errorf("gen: partitions must be from 1 to 10000 (0: default %d), got %d", DefaultPartitions, c.Partitions))
	}
	errs = append(errs, c.planErrors()...)
	return errors.Join(errs...)
}

// planErrors reports the problems of the fields PlanOrders uses.
func (c OrdersConfig) planErrors() []error {
	var errs []error
	if c.Events <= 0 || c.Events > MaxOrdersEvents {
		errs = append(errs, fmt.Errorf("gen: events must be from 1 to %d, got %d", MaxOrdersEvents, c.Events))
	}
	if c.Customers < 0 || c.Customers > 1_000_000 {
		errs = append(errs, fmt.Errorf("gen: customers must be from 1 to 1000000 (0: default %d), got %d", DefaultCustomers, c.Customers))
	}
	rateOK := true
	for _, r := range []struct {
		name string
		v    float64
	}{
		{"duplicate", c.DuplicateRate},
		{"conflict", c.ConflictRate},
		{"out-of-order", c.OutOfOrderRate},
	} {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			errs = append(errs, fmt.Errorf("gen: %s rate must be from 0 to 1, got %v", r.name, r.v))
			rateOK = false
		}
	}
	if sum := c.DuplicateRate + c.ConflictRate + 2*c.OutOfOrderRate; rateOK && sum > MaxInjected+1e-9 {
		errs = append(errs, fmt.Errorf("gen: duplicate rate + conflict rate + 2 × out-of-order rate is %.3g, at most %v allowed (fresh events must remain)", sum, MaxInjected))
	}
	return errs
}

func (c OrdersConfig) withDefaults() OrdersConfig {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Customers == 0 {
		c.Customers = DefaultCustomers
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// ProduceOrders plans cfg's records (PlanOrders), writes them in plan order
// to cfg.Topic with the idempotent producer (acks=all, per-partition order
// kept; kgo's default partitioner hashes the customer key with murmur2 like
// Kafka's, so each customer's records share a partition), and returns the
// truth: the simulation of the orders topology over the records written,
// with Topic, Partitions (the topic's actual count), Seed and Customers
// set. The topic is created when missing and must hold no records
// (ErrTopicNotEmpty). Unreachable brokers are reported within
// clientcfg.ProbeTimeout. On error the returned Truth is the zero value.
func ProduceOrders(ctx context.Context, cfg OrdersConfig) (Truth, error) {
	if err := cfg.Validate(); err != nil {
		return Truth{}, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger.Named("gen").With("topic", cfg.Topic, "example", "orders")

	plan, err := PlanOrders(cfg)
	if err != nil {
		return Truth{}, err
	}

	cl, partitions, err := openEmptyTopic(ctx, cfg.Brokers, cfg.Topic, cfg.Partitions, cfg.Logger, log, cfg.ClientOptions,
		kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		return Truth{}, err
	}
	defer cl.Close()

	if want := int(math.Round(float64(cfg.Events) * cfg.OutOfOrderRate)); plan.OutOfOrder < want {
		log.Warn("too few orders with two versions for the out-of-order rate; injecting fewer",
			"wanted", want, "injected", plan.OutOfOrder)
	}
	log.Info("producing", "events", plan.Len(), "customers", cfg.Customers, "partitions", partitions,
		"duplicates", plan.Duplicates, "conflicts", plan.Conflicts, "out_of_order", plan.OutOfOrder, "seed", cfg.Seed)
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

	sim := NewOrdersSimulator()
	stopBar := startProgress(cfg.Progress, plan.Len(), &acked)
	began := time.Now()
	for i := range plan.Len() {
		if pctx.Err() != nil {
			break
		}
		if cfg.Rate > 0 && i%100 == 0 {
			pace(pctx, began, i, cfg.Rate)
		}
		r := plan.Record(i)
		sim.Apply(r.Key, r.EventID, r.Value)
		cl.Produce(pctx, r.kgoRecord(), promise)
	}
	flushErr := cl.Flush(ctx)
	took := time.Since(began)
	n := int(acked.Load())
	stopBar(n)

	errOnce.Do(func() {}) // firstErr is final from here on
	switch {
	case firstErr != nil && ctx.Err() == nil:
		return Truth{}, fmt.Errorf("gen: %d of %d records acknowledged: %w", n, plan.Len(), firstErr)
	case ctx.Err() != nil:
		return Truth{}, fmt.Errorf("gen: %d of %d records acknowledged: %w", n, plan.Len(), ctx.Err())
	case flushErr != nil:
		return Truth{}, fmt.Errorf("gen: flush: %w", flushErr)
	case n != plan.Len():
		return Truth{}, fmt.Errorf("gen: %d of %d records acknowledged", n, plan.Len())
	}
	truth := sim.Truth()
	truth.Topic, truth.Partitions, truth.Seed, truth.Customers = cfg.Topic, partitions, cfg.Seed, cfg.Customers
	log.Info("produced", "records", n, "duration", took.Round(time.Millisecond),
		"accepted", truth.Accepted, "duplicates", truth.DuplicatesInjected, "conflicts", truth.ConflictsInjected, "stale", truth.StaleInjected)
	return truth, nil
}

// pace waits until n records at rate per second are due since began.
func pace(ctx context.Context, began time.Time, n int, rate float64) {
	due := began.Add(time.Duration(float64(n) / rate * float64(time.Second)))
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// checkEmpty fails with ErrTopicNotEmpty when topic holds records. A
// missing topic is empty.
func checkEmpty(ctx context.Context, adm *kadm.Client, topic string) error {
	start, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = start.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gen: list start offsets of %q: %w", topic, err)
	}
	end, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = end.Error()
	}
	if err != nil {
		return fmt.Errorf("gen: list end offsets of %q: %w", topic, err)
	}
	var held int64
	end.Each(func(o kadm.ListedOffset) {
		s, _ := start.Lookup(topic, o.Partition)
		held += o.Offset - s.Offset
	})
	if held > 0 {
		return fmt.Errorf("%w: %q holds %d records; the truth describes only the records of one run: use a new topic",
			ErrTopicNotEmpty, topic, held)
	}
	return nil
}
