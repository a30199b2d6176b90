package gen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/clientcfg"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
)

func broker(t *testing.T) []string {
	t.Helper()
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b.Addrs()
}

func TestProduce(t *testing.T) {
	brokers := broker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var progress bytes.Buffer
	res, err := gen.Produce(ctx, gen.Config{
		Brokers:  brokers,
		Topic:    "events",
		Records:  1000,
		Keys:     50,
		Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 1000 || res.Partitions != gen.DefaultPartitions || res.RecordsPerSec <= 0 || res.RunID == "" {
		t.Fatalf("result = %+v", res)
	}
	if !strings.Contains(progress.String(), "1000/1000") {
		t.Errorf("progress output lacks 1000/1000: %q", progress.String())
	}

	recs, err := verify.ReadAll(ctx, brokers, "events")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1000 {
		t.Fatalf("read %d records, want 1000", len(recs))
	}
	values := map[string]bool{}
	events := map[string]bool{}
	partitions := map[int32]int{}
	keyPartition := map[string]int32{}
	lastVersion := map[string]int{}
	for _, r := range recs {
		partitions[r.Partition]++
		if values[string(r.Value)] {
			t.Fatalf("duplicate value %q", r.Value)
		}
		values[string(r.Value)] = true
		id := r.Headers[gen.HeaderEventID]
		if id == "" || events[id] || !strings.HasPrefix(id, res.RunID+"-") {
			t.Fatalf("event id %q missing, repeated or not of run %s", id, res.RunID)
		}
		events[id] = true
		var v struct {
			Run     string `json:"run"`
			Seq     int    `json:"seq"`
			Key     string `json:"key"`
			Version int    `json:"version"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("value %q: %v", r.Value, err)
		}
		key := string(r.Key)
		if v.Run != res.RunID || v.Key != key || id != res.RunID+"-"+strconv.Itoa(v.Seq) {
			t.Fatalf("value %q does not match key %q / event id %q", r.Value, key, id)
		}
		version, err := strconv.Atoi(r.Headers[gen.HeaderVersion])
		if err != nil || version != v.Version {
			t.Fatalf("version header %q, value version %d", r.Headers[gen.HeaderVersion], v.Version)
		}
		// ReadAll sorts by partition and offset, and one key lives in
		// one partition: versions must count up by one per key.
		if version != lastVersion[key]+1 {
			t.Fatalf("key %s: version %d after %d", key, version, lastVersion[key])
		}
		lastVersion[key] = version
		if p, ok := keyPartition[key]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", key, p, r.Partition)
		}
		keyPartition[key] = r.Partition
	}
	if len(lastVersion) != 50 {
		t.Errorf("%d distinct keys, want 50", len(lastVersion))
	}
	if len(partitions) != 6 {
		t.Errorf("records in %d partitions, want 6: %v", len(partitions), partitions)
	}
	for key, v := range lastVersion {
		if v != 20 {
			t.Errorf("key %s: last version %d, want 20", key, v)
		}
	}
}

func TestProduceExistingTopicAndValueSize(t *testing.T) {
	brokers := broker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, "two"); err != nil {
		t.Fatal(err)
	}
	res, err := gen.Produce(ctx, gen.Config{Brokers: brokers, Topic: "two", Records: 10, Partitions: 8, ValueSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partitions != 2 {
		t.Errorf("partitions = %d, want the existing 2", res.Partitions)
	}
	recs, err := verify.ReadAll(ctx, brokers, "two")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if len(r.Value) != 300 || !json.Valid(r.Value) {
			t.Fatalf("value of %d bytes (valid JSON %v), want 300", len(r.Value), json.Valid(r.Value))
		}
		if r.Partition > 1 {
			t.Fatalf("record in partition %d", r.Partition)
		}
	}
	if len(recs) != 10 {
		t.Fatalf("read %d records, want 10", len(recs))
	}
}

func TestProduceUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = gen.Produce(ctx, gen.Config{Brokers: []string{addr}, Topic: "t", Records: 1})
	if !errors.Is(err, clientcfg.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

func TestValidate(t *testing.T) {
	ok := gen.Config{Brokers: []string{"127.0.0.1:9092"}, Topic: "t", Records: 1}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*gen.Config)
		want []string
	}{
		{"no brokers", func(c *gen.Config) { c.Brokers = nil }, []string{"no brokers"}},
		{"bad broker", func(c *gen.Config) { c.Brokers = []string{"localhost"} }, []string{`"localhost" is not host:port`}},
		{"bad topic", func(c *gen.Config) { c.Topic = "a/b" }, []string{`topic "a/b"`}},
		{"dot topic", func(c *gen.Config) { c.Topic = ".." }, []string{"not a valid name"}},
		{"long topic", func(c *gen.Config) { c.Topic = strings.Repeat("a", 250) }, []string{"at most 249"}},
		{"everything at once", func(c *gen.Config) {
			*c = gen.Config{Partitions: -1, Keys: -1, ValueSize: -1}
		}, []string{"no brokers", "no topic", "records must be above zero", "partitions must be", "keys must not be negative", "value size must be"}},
		{"huge value", func(c *gen.Config) { c.ValueSize = gen.MaxValueSize + 1 }, []string{"value size"}},
		{"rate not a number", func(c *gen.Config) { c.Rate = math.NaN() }, []string{"rate"}},
		{"infinite rate", func(c *gen.Config) { c.Rate = math.Inf(1) }, []string{"rate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate = nil")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, perr := gen.Produce(context.Background(), c); perr == nil || perr.Error() != err.Error() {
				t.Errorf("Produce did not return the validation error: %v", perr)
			}
		})
	}
}
