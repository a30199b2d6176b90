package consume_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/consume"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/serde"
)

// consumeAll runs consume.Run and parses its lines.
func consumeAll(t *testing.T, ctx context.Context, cfg consume.Config) []consume.Record {
	t.Helper()
	var out bytes.Buffer
	n, err := consume.Run(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("consume %+v: %v", cfg, err)
	}
	recs := parse(t, out.String())
	if n != len(recs) {
		t.Errorf("consume said %d records, printed %d", n, len(recs))
	}
	return recs
}

func parse(t *testing.T, s string) []consume.Record {
	t.Helper()
	var recs []consume.Record
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var r consume.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

func values(recs []consume.Record) string {
	var vs []string
	for _, r := range recs {
		vs = append(vs, string(r.Value))
	}
	return strings.Join(vs, " ")
}

// A topic with committed, aborted and plain records, read committed and
// uncommitted, from an offset, from a time, and up to a maximum.
func TestConsumeReadsWhatIsAsked(t *testing.T) {
	e := enginetest.New(t)
	topic := e.Name("t")
	e.CreateTopic(topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	rec := func(v string, at time.Time) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(v), Timestamp: at,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(e.Brokers...), kgo.TransactionalID(topic+"-txn"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	write := func(commit kgo.TransactionEndTry, rs ...*kgo.Record) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	write(kgo.TryCommit, rec("a", t0), rec("b", t0.Add(time.Hour)))
	write(kgo.TryAbort, rec("aborted", t0.Add(2*time.Hour)))
	e.ProduceRecords(rec("c", t0.Add(3*time.Hour)))

	base := consume.Config{Brokers: e.Brokers, Topic: topic}
	for _, tc := range []struct {
		name string
		cfg  func(c *consume.Config)
		want string
	}{
		{"read_committed from the start", func(*consume.Config) {}, `"a" "b" "c"`},
		{"read_uncommitted", func(c *consume.Config) { c.Uncommitted = true }, `"a" "b" "aborted" "c"`},
		{"from offset 1", func(c *consume.Config) { c.From = "1" }, `"b" "c"`},
		{"from a time", func(c *consume.Config) { c.From = t0.Add(30 * time.Minute).Format(time.RFC3339) }, `"b" "c"`},
		// Transaction markers carry the time they were written: now.
		{"from a time after every record", func(c *consume.Config) { c.From = time.Now().Add(time.Hour).Format(time.RFC3339) }, ``},
		{"from latest", func(c *consume.Config) { c.From = "latest" }, ``},
		{"at most two", func(c *consume.Config) { c.Max = 2 }, `"a" "b"`},
	} {
		cfg := base
		tc.cfg(&cfg)
		recs := consumeAll(t, ctx, cfg)
		if got := values(recs); got != tc.want {
			t.Errorf("%s: values %s, want %s", tc.name, got, tc.want)
		}
		if len(recs) > 0 && (recs[0].Headers["h"] != "x" || string(recs[0].Key) != `"k"` || recs[0].Topic != topic) {
			t.Errorf("%s: first record %+v", tc.name, recs[0])
		}
	}
	if recs := consumeAll(t, ctx, base); recs[1].Offset != 1 || !recs[1].Timestamp.Equal(t0.Add(time.Hour)) {
		t.Errorf("second record %+v, want offset 1 at %v", recs[1], t0.Add(time.Hour))
	}

	_, err = consume.Run(ctx, consume.Config{Brokers: e.Brokers, Topic: e.Name("nope")}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing topic: %v", err)
	}
	_, err = consume.Run(ctx, consume.Config{Brokers: e.Brokers, Topic: topic, From: "yesterday", Value: "xml"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `--from "yesterday"`) || !strings.Contains(err.Error(), `unknown format "xml"`) {
		t.Errorf("bad flags: %v", err)
	}
}

// Keys and values decode by their format; one that does not decode is
// printed as base64 with the reason; a rejected record's headers become
// fields.
func TestConsumeDecodes(t *testing.T) {
	e := enginetest.New(t)
	topic := e.Name("t")
	e.CreateTopic(topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, _ := serde.Int64().Encode(42)
	e.ProduceRecords(
		&kgo.Record{Topic: topic, Key: n, Value: []byte(`{"amount":250}`), Headers: []kgo.RecordHeader{
			{Key: "onceflow-reject-reason", Value: []byte("duplicate")},
			{Key: "onceflow-reject-node", Value: []byte("dedup")},
			{Key: "onceflow-reject-error", Value: []byte("seen")},
			{Key: "onceflow-source", Value: []byte("in/0/7")},
		}},
		&kgo.Record{Topic: topic, Key: []byte{1, 2}, Value: []byte("not json")},
		&kgo.Record{Topic: topic, Key: nil, Value: nil},
	)
	recs := consumeAll(t, ctx, consume.Config{Brokers: e.Brokers, Topic: topic, Key: "int64", Value: "json", Rejected: true})
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	if r := recs[0]; string(r.Key) != "42" || string(r.Value) != `{"amount":250}` || r.Reason != "duplicate" || r.Node != "dedup" || r.Error != "seen" || r.Source != "in/0/7" {
		t.Errorf("first: %+v", r)
	}
	if r := recs[1]; r.KeyError == "" || r.KeyB64 != "AQI=" || r.ValueError == "" || r.ValueB64 != "bm90IGpzb24=" || string(r.Value) != "null" {
		t.Errorf("second: %+v", r)
	}
	if r := recs[2]; string(r.Key) != "null" || string(r.Value) != "null" || r.KeyError != "" || r.ValueError != "" {
		t.Errorf("third (null key and value): %+v", r)
	}
}

// lines is a writer the test reads while Run writes.
type lines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With Follow, records written after the start are printed; the end of
// the context ends the run without an error.
func TestConsumeFollows(t *testing.T) {
	e := enginetest.New(t)
	topic := e.Name("t")
	e.CreateTopic(topic, 2)
	e.ProduceRecords(&kgo.Record{Topic: topic, Value: []byte("before")})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fctx, stop := context.WithCancel(ctx)
	var out lines
	done := make(chan error, 1)
	go func() {
		_, err := consume.Run(fctx, consume.Config{Brokers: e.Brokers, Topic: topic, Follow: true}, &out)
		done <- err
	}()
	e.ProduceRecords(&kgo.Record{Topic: topic, Value: []byte("after")})
	for !strings.Contains(out.String(), `"after"`) {
		select {
		case err := <-done:
			t.Fatalf("run ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("no record written after the start: %q", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v", err)
	}
	if got := values(parse(t, out.String())); got != `"before" "after"` && got != `"after" "before"` {
		t.Errorf("values %s", got)
	}
}
