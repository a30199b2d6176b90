package gen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
	"github.com/onceflow/onceflow/internal/wire"
)

// LinesFormat documents the JSON-lines records ParseLines reads (for
// `onceflow produce --from`).
const LinesFormat = `One record per line, a JSON object (blank lines are skipped):

  {"key": "order-1", "value": "hello", "headers": {"event-id": "e-1"}, "partition": 2, "timestamp": "2024-05-01T12:00:00Z"}

  key         the key as UTF-8 text; or key_b64: the key's bytes in base64.
              Neither: a null key.
  value       the value as UTF-8 text; or value_b64: base64 bytes; or
              value_json: any JSON document, written compacted as its bytes.
              None: a null value (a tombstone).
  headers     an object of header names to UTF-8 text values (null: a null
              value), written in the order given.
  partition   the partition; without it a keyed record goes where Kafka's Java
              clients put its key (murmur2), a keyless one round-robin.
  timestamp   RFC 3339 text or milliseconds since the epoch; without it, the
              time of writing.

Unknown fields are errors, so a typo does not silently drop data.`

// ParseLines reads JSON-lines records (LinesFormat). It reads everything
// before returning, so a malformed file writes nothing; the error names
// every bad line (up to 10).
func ParseLines(r io.Reader) ([]*kgo.Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxValueSize*2)
	var (
		recs []*kgo.Record
		errs []error
	)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rec, err := parseLine(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			if len(errs) == 10 {
				errs = append(errs, errors.New("(more lines not checked)"))
				break
			}
			continue
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("gen: records: %w", err)
	}
	return recs, nil
}

// line is one JSON-lines record as written.
type line struct {
	Key       *string         `json:"key"`
	KeyB64    *string         `json:"key_b64"`
	Value     *string         `json:"value"`
	ValueB64  *string         `json:"value_b64"`
	ValueJSON json.RawMessage `json:"value_json"`
	Headers   orderedHeaders  `json:"headers"`
	Partition *int32          `json:"partition"`
	Timestamp json.RawMessage `json:"timestamp"`
}

func parseLine(b []byte) (*kgo.Record, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l line
	if err := dec.Decode(&l); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	rec := &kgo.Record{Headers: l.Headers, Partition: -1}
	var err error
	if rec.Key, err = oneOf("key", l.Key, l.KeyB64, nil); err != nil {
		return nil, err
	}
	if rec.Value, err = oneOf("value", l.Value, l.ValueB64, l.ValueJSON); err != nil {
		return nil, err
	}
	if l.Partition != nil {
		if *l.Partition < 0 {
			return nil, fmt.Errorf("partition %d is negative", *l.Partition)
		}
		rec.Partition = *l.Partition
	}
	if rec.Timestamp, err = parseTimestamp(l.Timestamp); err != nil {
		return nil, err
	}
	return rec, nil
}

// oneOf returns the bytes of whichever form of a field is set: text,
// base64 or JSON. None is nil (a Kafka null); more than one is an error.
func oneOf(name string, text, b64 *string, raw json.RawMessage) ([]byte, error) {
	set := 0
	for _, ok := range []bool{text != nil, b64 != nil, raw != nil} {
		if ok {
			set++
		}
	}
	switch {
	case set > 1:
		return nil, fmt.Errorf("%s is given in more than one form", name)
	case text != nil:
		return []byte(*text), nil
	case b64 != nil:
		b, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			return nil, fmt.Errorf("%s_b64: %w", name, err)
		}
		return b, nil
	case raw != nil:
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fmt.Errorf("%s_json: %w", name, err)
		}
		return buf.Bytes(), nil
	}
	return nil, nil
}

// parseTimestamp reads RFC 3339 text or milliseconds since the epoch;
// absent is the zero time (the client stamps the time of writing).
func parseTimestamp(raw json.RawMessage) (time.Time, error) {
	if raw == nil {
		return time.Time{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("timestamp: %w", err)
		}
		return t, nil
	}
	ms, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %s: want RFC 3339 text or integer milliseconds since the epoch", raw)
	}
	return time.UnixMilli(ms), nil
}

// orderedHeaders decodes a JSON object of header names to text values,
// keeping the object's order (a record's headers are a list).
type orderedHeaders []kgo.RecordHeader

func (h *orderedHeaders) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*h = nil
		return nil
	}
	if tok != json.Delim('{') {
		return errors.New("headers: want an object of names to text values")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var v *string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("header %q: want a text value or null", tok)
		}
		hdr := kgo.RecordHeader{Key: tok.(string)}
		if v != nil {
			hdr.Value = []byte(*v)
		}
		*h = append(*h, hdr)
	}
	_, err = dec.Token()
	return err
}

// produceTimeout bounds the writing of ProduceLines's records.
const produceTimeout = 2 * time.Minute

// LinesConfig configures ProduceLines.
type LinesConfig struct {
	// Brokers are the seed brokers (host:port). Required.
	Brokers []string
	// ClientOptions are appended to the client's options (TLS, SASL).
	ClientOptions []kgo.Opt
	// Topic is the topic to write; created when missing. Required.
	Topic string
	// Records are the records to write, from ParseLines: Partition -1
	// lets the key choose.
	Records []*kgo.Record
	// Partitions is the partition count used when the topic is created.
	// Default 6.
	Partitions int
	// TopicConfigs are set on the topic when it is created.
	TopicConfigs map[string]string
	// Transactional writes every record in one transaction: a
	// read_committed reader sees all of them or none. Default false: the
	// idempotent producer (no duplicates from retries, no atomicity).
	Transactional bool
	// Logger receives the run's log lines. Default nil: none.
	Logger hclog.Logger
}

// LinesResult is what ProduceLines wrote.
type LinesResult struct {
	Records    int // acknowledged (committed, when transactional)
	Partitions int // of the topic
}

// ProduceLines writes cfg.Records to cfg.Topic, creating it when missing,
// and returns once every record is acknowledged (and, when transactional,
// committed). A record's partition must exist; keyed records without one
// are placed by murmur2, as Kafka's Java clients place them.
func ProduceLines(ctx context.Context, cfg LinesConfig) (LinesResult, error) {
	if err := errors.Join(validTarget(cfg.Brokers, cfg.Topic)...); err != nil {
		return LinesResult{}, err
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = DefaultPartitions
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	log := cfg.Logger.Named("gen").With("topic", cfg.Topic)
	runID, err := newRunID()
	if err != nil {
		return LinesResult{}, err
	}
	opts := append(clientcfg.Options(cfg.Brokers, "onceflow-produce", cfg.Logger.Named("kgo")),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// A batch holds at least one record whatever its size, and small
		// records batch below the broker's default limit.
		kgo.ProducerBatchMaxBytes(int32(max(1_000_012, largest(cfg.Records)+64<<10))),
		// No RecordDeliveryTimeout: kgo counts it from the record's
		// timestamp, which here can be the user's, long past. The produce
		// is bounded by produceTimeout instead.
	)
	if cfg.Transactional {
		opts = append(opts, kgo.TransactionalID("onceflow-produce-"+runID), kgo.TransactionTimeout(time.Minute))
	}
	cl, err := kgo.NewClient(append(opts, cfg.ClientOptions...)...)
	if err != nil {
		return LinesResult{}, fmt.Errorf("gen: client: %w", err)
	}
	defer cl.Close()
	if err := clientcfg.Probe(ctx, cl, cfg.Brokers); err != nil {
		return LinesResult{}, fmt.Errorf("gen: %w", err)
	}
	n, err := ensureTopic(ctx, kadm.NewClient(cl), Config{Topic: cfg.Topic, Partitions: cfg.Partitions, TopicConfigs: cfg.TopicConfigs}, log)
	if err != nil {
		return LinesResult{}, err
	}
	res := LinesResult{Partitions: n}
	if err := place(cfg.Records, int32(n)); err != nil {
		return res, err
	}
	if cfg.Transactional {
		if err := cl.BeginTransaction(); err != nil {
			return res, fmt.Errorf("gen: begin transaction: %w", err)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, produceTimeout)
	defer cancel()
	results := cl.ProduceSync(pctx, cfg.Records...)
	if err := results.FirstErr(); err != nil {
		if cfg.Transactional {
			_ = cl.EndTransaction(context.WithoutCancel(ctx), kgo.TryAbort)
			return res, fmt.Errorf("gen: produce (transaction aborted, nothing written): %w", err)
		}
		for _, r := range results {
			if r.Err == nil {
				res.Records++
			}
		}
		return res, fmt.Errorf("gen: %d of %d records acknowledged: %w", res.Records, len(cfg.Records), err)
	}
	if cfg.Transactional {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return res, fmt.Errorf("gen: commit transaction: %w", err)
		}
	}
	res.Records = len(cfg.Records)
	log.Info("produced", "records", res.Records, "transactional", cfg.Transactional)
	return res, nil
}

// place sets each record's partition: its own (checked against n), its
// key's (murmur2), or round-robin for keyless records.
func place(recs []*kgo.Record, n int32) error {
	var errs []error
	for i, r := range recs {
		switch {
		case r.Partition >= n:
			errs = append(errs, fmt.Errorf("record %d: partition %d does not exist (the topic has %d)", i+1, r.Partition, n))
		case r.Partition < 0:
			r.Partition = wire.Partition(r.Key, int32(i%int(n)), n)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}

// largest is the size of the largest record's key, value and headers.
func largest(recs []*kgo.Record) int {
	m := 0
	for _, r := range recs {
		n := len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			n += len(h.Key) + len(h.Value)
		}
		m = max(m, n)
	}
	return m
}
