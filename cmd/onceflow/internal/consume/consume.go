package consume

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
	"github.com/onceflow/onceflow/internal/wire"
)

// Config is what to read and how to print it. The zero value of each
// field but Brokers and Topic is the default.
type Config struct {
	Brokers []string
	Topic   string
	// Uncommitted reads read_uncommitted: records of open and aborted
	// transactions too (default: read_committed).
	Uncommitted bool
	// From is where each partition starts: "earliest" (the default),
	// "latest", an offset, or a time (RFC 3339: the first record at or
	// after it).
	From string
	// Follow keeps reading past the ends until ctx ends (default: stop at
	// the ends the topic had at the start).
	Follow bool
	// Max stops after this many records (0: no limit).
	Max int
	// Key and Value are the formats of keys and values (see Formats;
	// default "string").
	Key, Value string
	// Rejected adds the fields of a rejected record (reason, node, error,
	// source) from its onceflow-reject-* and onceflow-source headers.
	Rejected bool
	// Extra are client options appended to the defaults (TLS, SASL).
	Extra []kgo.Opt
}

// Record is one printed line.
type Record struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp time.Time         `json:"timestamp"`
	Headers   map[string]string `json:"headers,omitempty"`
	Key       json.RawMessage   `json:"key"`
	Value     json.RawMessage   `json:"value"`
	// KeyError and ValueError say why a key or value did not decode;
	// the raw bytes are then in KeyB64 or ValueB64.
	KeyError   string `json:"key_error,omitempty"`
	KeyB64     string `json:"key_b64,omitempty"`
	ValueError string `json:"value_error,omitempty"`
	ValueB64   string `json:"value_b64,omitempty"`
	// The fields of a rejected record (Config.Rejected).
	Reason string `json:"reason,omitempty"`
	Node   string `json:"node,omitempty"`
	Error  string `json:"error,omitempty"`
	Source string `json:"source,omitempty"`
}

// Run writes the records of cfg.Topic to w as JSON lines until the ends
// (or, with Follow, until ctx ends) and returns how many it wrote. An end
// of ctx with Follow is a normal end.
func Run(ctx context.Context, cfg Config, w io.Writer) (int, error) {
	if err := cfg.check(); err != nil {
		return 0, err
	}
	iso := kgo.ReadCommitted()
	if cfg.Uncommitted {
		iso = kgo.ReadUncommitted()
	}
	cl, err := kgo.NewClient(append(append(clientcfg.Options(cfg.Brokers, "onceflow-consume", nil),
		kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond)), cfg.Extra...)...)
	if err != nil {
		return 0, fmt.Errorf("consume: client: %w", err)
	}
	defer cl.Close()
	if err := clientcfg.Probe(ctx, cl, cfg.Brokers); err != nil {
		return 0, fmt.Errorf("consume: %w", err)
	}
	starts, ends, err := cfg.bounds(ctx, kadm.NewClient(cl))
	if err != nil {
		return 0, err
	}
	offsets := map[int32]kgo.Offset{}
	for p, s := range starts {
		if cfg.Follow || s < ends[p] {
			offsets[p] = kgo.NewOffset().At(s)
		}
	}
	if len(offsets) == 0 {
		return 0, nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: offsets})
	remaining := len(offsets)
	enc := json.NewEncoder(w)
	n := 0
	for cfg.Follow || remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			if cfg.Follow {
				return n, nil
			}
			return n, fmt.Errorf("consume: %s: %d partitions not read to their end: %w", cfg.Topic, remaining, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("consume: %s/%d: %w", cfg.Topic, p, err)
			}
		})
		if ferr != nil && !kerr.IsRetriable(errors.Unwrap(ferr)) {
			return n, ferr
		}
		var done []int32
		var werr error
		fs.EachRecord(func(r *kgo.Record) {
			end, bounded := ends[r.Partition]
			if !cfg.Follow && bounded && r.Offset+1 >= end {
				done = append(done, r.Partition)
				delete(ends, r.Partition)
			}
			if werr != nil || r.Attrs.IsControl() || !cfg.Follow && r.Offset >= end || cfg.Max > 0 && n >= cfg.Max {
				return
			}
			if werr = enc.Encode(cfg.line(r)); werr == nil {
				n++
			}
		})
		if werr != nil {
			return n, fmt.Errorf("consume: write: %w", werr)
		}
		if cfg.Max > 0 && n >= cfg.Max {
			return n, nil
		}
		if len(done) > 0 {
			remaining -= len(done)
			cl.PauseFetchPartitions(map[string][]int32{cfg.Topic: done})
		}
	}
	return n, nil
}

func (cfg *Config) check() error {
	var errs []error
	if len(cfg.Brokers) == 0 {
		errs = append(errs, errors.New("consume: no brokers given"))
	}
	if cfg.Topic == "" {
		errs = append(errs, errors.New("consume: no topic given"))
	}
	if cfg.Key == "" {
		cfg.Key = "string"
	}
	if cfg.Value == "" {
		cfg.Value = "string"
	}
	errs = append(errs, CheckFormat(cfg.Key), CheckFormat(cfg.Value))
	if _, _, err := parseFrom(cfg.From); err != nil {
		errs = append(errs, err)
	}
	if cfg.Max < 0 {
		errs = append(errs, errors.New("consume: a negative maximum"))
	}
	return errors.Join(errs...)
}

// parseFrom reads Config.From: an offset (offset >= 0), earliest (-2),
// latest (-1), or a time.
func parseFrom(s string) (offset int64, at time.Time, err error) {
	switch s {
	case "", "earliest":
		return -2, time.Time{}, nil
	case "latest":
		return -1, time.Time{}, nil
	}
	if _, err := fmt.Sscan(s, &offset); err == nil && offset >= 0 && !strings.ContainsAny(s, "-:T") {
		return offset, time.Time{}, nil
	}
	if at, err = time.Parse(time.RFC3339Nano, s); err == nil {
		return 0, at, nil
	}
	return 0, time.Time{}, fmt.Errorf("consume: --from %q: earliest, latest, an offset or an RFC 3339 time", s)
}

// bounds returns where each partition starts and, unless following, the
// end it is read to: the last stable offset read_committed, the high
// watermark otherwise.
func (cfg Config) bounds(ctx context.Context, adm *kadm.Client) (starts, ends map[int32]int64, err error) {
	list := func(what string, fn func() (kadm.ListedOffsets, error)) (map[int32]int64, error) {
		lo, err := fn()
		if err == nil {
			err = lo.Error()
		}
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("consume: topic %q does not exist", cfg.Topic)
		}
		if err != nil {
			return nil, fmt.Errorf("consume: list %s offsets of %q: %w", what, cfg.Topic, err)
		}
		m := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) { m[o.Partition] = o.Offset })
		if len(m) == 0 {
			return nil, fmt.Errorf("consume: topic %q does not exist", cfg.Topic)
		}
		return m, nil
	}
	first, err := list("start", func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, cfg.Topic) })
	if err != nil {
		return nil, nil, err
	}
	var last map[int32]int64
	if cfg.Uncommitted {
		last, err = list("end", func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, cfg.Topic) })
	} else {
		last, err = list("last stable", func() (kadm.ListedOffsets, error) { return adm.ListCommittedOffsets(ctx, cfg.Topic) })
	}
	if err != nil {
		return nil, nil, err
	}
	offset, at, _ := parseFrom(cfg.From)
	switch {
	case !at.IsZero():
		after, err := list("time", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, at.UnixMilli(), cfg.Topic) })
		if err != nil {
			return nil, nil, err
		}
		for p, o := range after {
			if o < 0 { // no record at or after the time
				after[p] = last[p]
			}
		}
		starts = after
	case offset == -2:
		starts = first
	case offset == -1:
		starts = last
	default:
		starts = map[int32]int64{}
		for p := range first {
			starts[p] = min(max(offset, first[p]), last[p])
		}
	}
	for p, s := range starts {
		starts[p] = min(max(s, first[p]), last[p])
	}
	if cfg.Follow {
		return starts, map[int32]int64{}, nil
	}
	return starts, last, nil
}

// line is the printed form of r.
func (cfg Config) line(r *kgo.Record) Record {
	l := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UTC()}
	if len(r.Headers) > 0 {
		l.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			l.Headers[h.Key] = string(h.Value)
		}
	}
	var err error
	if l.Key, err = decode(cfg.Key, r.Key); err != nil {
		l.Key, l.KeyError, l.KeyB64 = json.RawMessage("null"), err.Error(), base64.StdEncoding.EncodeToString(r.Key)
	}
	if l.Value, err = decode(cfg.Value, r.Value); err != nil {
		l.Value, l.ValueError, l.ValueB64 = json.RawMessage("null"), err.Error(), base64.StdEncoding.EncodeToString(r.Value)
	}
	if cfg.Rejected {
		l.Reason = l.Headers[wire.HeaderRejectReason]
		l.Node = l.Headers[wire.HeaderRejectNode]
		l.Error = l.Headers[wire.HeaderRejectError]
		l.Source = l.Headers[wire.HeaderSource]
	}
	return l
}
