package gen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/schollz/progressbar/v3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
)

// Header names written on every record.
const (
	HeaderEventID = "event-id"
	HeaderVersion = "version"
)

// Defaults for the zero values of Config.
const (
	DefaultPartitions = 6
	DefaultKeys       = 1000
)

// MaxValueSize is the largest ValueSize accepted. A value above about
// 1 MiB needs a topic with a raised max.message.bytes (see TopicConfigs):
// the broker refuses it otherwise.
const MaxValueSize = 64 << 20

// Config configures one generator run.
type Config struct {
	// Brokers are the seed brokers (host:port). Required.
	Brokers []string
	// ClientOptions are appended to the client's options (TLS, SASL:
	// clientcfg.Security.Options). Default nil.
	ClientOptions []kgo.Opt
	// Topic is the topic to write; created when missing. Required.
	Topic string
	// Records is how many records to write. Required, above zero.
	Records int
	// Partitions is the partition count used when the topic is created
	// (an existing topic keeps its own count). Default 6.
	Partitions int
	// Keys is how many distinct keys the records use. Default 1000.
	Keys int
	// ValueSize pads every value to this many bytes. Default 0: short
	// values (about 60 bytes); a value is never shorter than its unique
	// part.
	ValueSize int
	// TopicConfigs are set on the topic when it is created (an existing
	// topic keeps its own), e.g. max.message.bytes. Default nil: the
	// broker's defaults.
	TopicConfigs map[string]string
	// Rate is how many records a second to write at most: record n is
	// sent n/Rate seconds after the first. Default 0: as fast as the
	// client writes.
	Rate float64
	// Progress receives a progress bar. Default nil: none.
	Progress io.Writer
	// Logger receives the run's log lines. Default nil: none.
	Logger hclog.Logger
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	errs := validTarget(c.Brokers, c.Topic)
	if c.Records <= 0 {
		errs = append(errs, fmt.Errorf("gen: records must be above zero, got %d", c.Records))
	}
	if c.Partitions < 0 || c.Partitions > 10000 {
		errs = append(errs, fmt.Errorf("gen: partitions must be from 1 to 10000 (0: default %d), got %d", DefaultPartitions, c.Partitions))
	}
	if c.Keys < 0 {
		errs = append(errs, fmt.Errorf("gen: keys must not be negative (0: default %d), got %d", DefaultKeys, c.Keys))
	}
	if c.ValueSize < 0 || c.ValueSize > MaxValueSize {
		errs = append(errs, fmt.Errorf("gen: value size must be from 0 to %d, got %d", MaxValueSize, c.ValueSize))
	}
	if !(c.Rate >= 0) || math.IsInf(c.Rate, 1) {
		errs = append(errs, fmt.Errorf("gen: rate must be a finite number, not negative (0: unpaced), got %v", c.Rate))
	}
	return errors.Join(errs...)
}

// validTarget checks the brokers and the topic every generator writes to.
func validTarget(brokers []string, topic string) []error {
	var errs []error
	if len(brokers) == 0 {
		errs = append(errs, errors.New("gen: no brokers given"))
	}
	for _, b := range brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			errs = append(errs, fmt.Errorf("gen: broker %q is not host:port", b))
		}
	}
	if err := validTopic(topic); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func validTopic(t string) error {
	switch {
	case t == "":
		return errors.New("gen: no topic given")
	case t == "." || t == "..":
		return fmt.Errorf("gen: topic %q is not a valid name", t)
	case len(t) > 249:
		return fmt.Errorf("gen: topic name is %d characters, at most 249 allowed", len(t))
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("gen: topic %q: only letters, digits, '.', '_' and '-' are allowed", t)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Keys == 0 {
		c.Keys = DefaultKeys
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Result describes a finished run.
type Result struct {
	// RunID is the run's identity, part of every value and event id.
	RunID string
	// Partitions is the topic's partition count.
	Partitions int
	// Records is how many records the broker acknowledged.
	Records int
	// Duration is the time from the first record sent to the last
	// acknowledged (topic creation excluded).
	Duration time.Duration
	// RecordsPerSec is Records / Duration.
	RecordsPerSec float64
}

// Produce writes cfg.Records records to cfg.Topic, creating the topic when
// it is missing, and returns once every record is acknowledged. On error
// the Result counts what was acknowledged before it. Unreachable brokers
// are reported within clientcfg.ProbeTimeout.
func Produce(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger.Named("gen").With("topic", cfg.Topic)

	runID, err := newRunID()
	if err != nil {
		return Result{}, err
	}
	res := Result{RunID: runID}

	opts := append(clientcfg.Options(cfg.Brokers, "onceflow-gen", cfg.Logger.Named("kgo")),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // with idempotence, the default; stated
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordDeliveryTimeout(2*time.Minute),
		// A batch holds at least one record whatever its size.
		kgo.ProducerBatchMaxBytes(int32(max(1_000_012, cfg.ValueSize+64<<10))),
	)
	cl, err := kgo.NewClient(append(opts, cfg.ClientOptions...)...)
	if err != nil {
		return res, fmt.Errorf("gen: client: %w", err)
	}
	defer cl.Close()
	if err := clientcfg.Probe(ctx, cl, cfg.Brokers); err != nil {
		return res, fmt.Errorf("gen: %w", err)
	}
	if res.Partitions, err = ensureTopic(ctx, kadm.NewClient(cl), cfg, log); err != nil {
		return res, err
	}

	log.Info("producing", "records", cfg.Records, "partitions", res.Partitions, "keys", cfg.Keys, "run", runID)
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

	stopBar := startProgress(cfg.Progress, cfg.Records, &acked)
	began := time.Now()
	for seq := range cfg.Records {
		if cfg.Rate > 0 {
			pace(pctx, began, seq, cfg.Rate)
		}
		if pctx.Err() != nil {
			break
		}
		cl.Produce(pctx, newRecord(runID, seq, cfg.Keys, cfg.ValueSize), promise)
	}
	flushErr := cl.Flush(ctx)
	res.Duration = time.Since(began)
	res.Records = int(acked.Load())
	if s := res.Duration.Seconds(); s > 0 {
		res.RecordsPerSec = float64(res.Records) / s
	}
	stopBar(res.Records)

	errOnce.Do(func() {}) // firstErr is final from here on
	switch {
	case firstErr != nil && ctx.Err() == nil:
		return res, fmt.Errorf("gen: %d of %d records acknowledged: %w", res.Records, cfg.Records, firstErr)
	case ctx.Err() != nil:
		return res, fmt.Errorf("gen: %d of %d records acknowledged: %w", res.Records, cfg.Records, ctx.Err())
	case flushErr != nil:
		return res, fmt.Errorf("gen: flush: %w", flushErr)
	}
	log.Info("produced", "records", res.Records, "duration", res.Duration.Round(time.Millisecond),
		"records_per_sec", int64(res.RecordsPerSec))
	return res, nil
}

// ensureTopic creates the topic with cfg.Partitions partitions when it is
// missing, and returns its partition count.
func ensureTopic(ctx context.Context, adm *kadm.Client, cfg Config, log hclog.Logger) (int, error) {
	for range 2 {
		tds, err := adm.ListTopics(ctx, cfg.Topic)
		if err != nil {
			return 0, fmt.Errorf("gen: metadata for %q: %w", cfg.Topic, err)
		}
		if td, ok := tds[cfg.Topic]; ok && td.Err == nil {
			n := len(td.Partitions)
			if n != cfg.Partitions {
				log.Warn("topic exists with another partition count; using it", "partitions", n, "requested", cfg.Partitions)
			} else {
				log.Info("topic exists", "partitions", n)
			}
			return n, nil
		} else if ok && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return 0, fmt.Errorf("gen: metadata for %q: %w", cfg.Topic, td.Err)
		}
		var configs map[string]*string
		for k, v := range cfg.TopicConfigs {
			if configs == nil {
				configs = map[string]*string{}
			}
			configs[k] = &v
		}
		_, err = adm.CreateTopic(ctx, int32(cfg.Partitions), -1, configs, cfg.Topic)
		if err == nil {
			log.Info("created topic", "partitions", cfg.Partitions)
			return cfg.Partitions, nil
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) {
			return 0, fmt.Errorf("gen: create topic %q: %w", cfg.Topic, err)
		}
		// Created concurrently by someone else: look it up again.
	}
	return 0, fmt.Errorf("gen: topic %q: neither found nor created", cfg.Topic)
}

func newRunID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("gen: run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// newRecord builds record seq of a run.
func newRecord(runID string, seq, keys, valueSize int) *kgo.Record {
	k := seq % keys
	version := seq/keys + 1

	key := strconv.AppendInt([]byte("key-"), int64(k), 10)
	eventID := strconv.AppendInt([]byte(runID+"-"), int64(seq), 10)
	ver := strconv.AppendInt(nil, int64(version), 10)
	return &kgo.Record{
		Key:   key,
		Value: value(runID, seq, key, ver, valueSize),
		Headers: []kgo.RecordHeader{
			{Key: HeaderEventID, Value: eventID},
			{Key: HeaderVersion, Value: ver},
		},
	}
}

// value is the value of record seq of run runID: a JSON object padded to
// size bytes (never shorter than its unique part).
func value(runID string, seq int, key, version []byte, size int) []byte {
	v := make([]byte, 0, max(size, 80))
	v = append(v, `{"run":"`...)
	v = append(v, runID...)
	v = append(v, `","seq":`...)
	v = strconv.AppendInt(v, int64(seq), 10)
	v = append(v, `,"key":"`...)
	v = append(v, key...)
	v = append(v, `","version":`...)
	v = append(v, version...)
	const padOpen, padClose = `,"pad":"`, `"}`
	if pad := size - len(v) - len(padOpen) - len(padClose); pad > 0 {
		v = append(v, padOpen...)
		for range pad {
			v = append(v, 'x')
		}
		return append(v, padClose...)
	}
	return append(v, '}')
}

// startProgress shows a bar on w (when not nil) that follows done until
// the returned function is called with the final count.
func startProgress(w io.Writer, total int, done *atomic.Int64) func(final int) {
	if w == nil {
		return func(int) {}
	}
	bar := progressbar.NewOptions64(int64(total),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("producing"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("records"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = bar.Set64(done.Load())
			}
		}
	}()
	return func(final int) {
		close(stop)
		<-stopped
		_ = bar.Set(final)
		if final < total {
			_ = bar.Exit()
			fmt.Fprintln(w)
		}
	}
}

// openEmptyTopic connects a producing client for topic (all-ISR acks, no
// compression, 5 ms linger, then extra, then the caller's clientOpts),
// checks the brokers answer, that topic holds no records, and creates it
// with partitions when it is missing. It returns the client, which the
// caller closes, and the topic's partition count.
func openEmptyTopic(ctx context.Context, brokers []string, topic string, partitions int, logger, log hclog.Logger,
	clientOpts []kgo.Opt, extra ...kgo.Opt) (*kgo.Client, int, error) {
	opts := append(clientcfg.Options(brokers, "onceflow-gen", logger.Named("kgo")),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // with idempotence, the default; stated
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	opts = append(append(opts, extra...), clientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, 0, fmt.Errorf("gen: client: %w", err)
	}
	if err := clientcfg.Probe(ctx, cl, brokers); err != nil {
		cl.Close()
		return nil, 0, fmt.Errorf("gen: %w", err)
	}
	adm := kadm.NewClient(cl)
	if err := checkEmpty(ctx, adm, topic); err != nil {
		cl.Close()
		return nil, 0, err
	}
	n, err := ensureTopic(ctx, adm, Config{Topic: topic, Partitions: partitions}, log)
	if err != nil {
		cl.Close()
		return nil, 0, err
	}
	return cl, n, nil
}
