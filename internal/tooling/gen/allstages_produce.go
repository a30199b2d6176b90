package gen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/examples/allstages"
)

// ProduceAllStages writes recs, in order, to the two source topics of
// prefix (created with partitions when missing; each must hold no records
// before the first call, see ErrTopicNotEmpty, unless appending is set),
// keyed by account with the header event-id and the event time as the
// record's timestamp, at rate records per second (0: as fast as it can),
// with the idempotent producer (each partition's order kept).
func ProduceAllStages(ctx context.Context, brokers []string, prefix string, partitions int, recs []AllStagesRecord, rate float64,
	appending bool, logger hclog.Logger) error {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	tp := allstages.TopicsFor(prefix)
	log := logger.Named("gen").With("example", "allstages")
	for _, topic := range []string{tp.Web, tp.App} {
		if appending {
			break
		}
		c, _, err := openEmptyTopic(ctx, brokers, topic, partitions, logger, log, nil)
		if err != nil {
			return err
		}
		c.Close()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond)) // no record timeout: kgo counts it from the record's timestamp, the event time
	if err != nil {
		return fmt.Errorf("gen: client: %w", err)
	}
	defer cl.Close()
	var (
		errOnce  sync.Once
		firstErr error
	)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			errOnce.Do(func() { firstErr = err; cancel() })
		}
	}
	began := time.Now()
	for i, r := range recs {
		if pctx.Err() != nil {
			break
		}
		if rate > 0 && i%50 == 0 {
			pace(pctx, began, i, rate)
		}
		topic := tp.Web
		if r.App {
			topic = tp.App
		}
		cl.Produce(pctx, &kgo.Record{Topic: topic, Key: []byte(r.Key), Value: r.Value, Timestamp: r.At,
			Headers: []kgo.RecordHeader{{Key: HeaderEventID, Value: []byte(r.EventID)}}}, promise)
	}
	flushErr := cl.Flush(ctx)
	errOnce.Do(func() {})
	switch {
	case firstErr != nil:
		return fmt.Errorf("gen: allstages: %w", firstErr)
	case ctx.Err() != nil:
		return fmt.Errorf("gen: allstages: %w", ctx.Err())
	case flushErr != nil:
		return fmt.Errorf("gen: allstages: flush: %w", flushErr)
	}
	log.Info("produced", "records", len(recs), "took", time.Since(began).Round(time.Millisecond))
	return nil
}
