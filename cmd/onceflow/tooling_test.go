package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/cmd/onceflow/internal/topics"
	"github.com/onceflow/onceflow/internal/tooling/embedded"
	"github.com/onceflow/onceflow/internal/wire"
)

func startBroker(t *testing.T) string {
	t.Helper()
	b, err := embedded.Start(embedded.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return strings.Join(b.Addrs(), ",")
}

// readCommitted reads every committed record of topic, sorted by
// partition and offset: it reads from the start, read_committed, until
// each partition's position reaches the last stable offset it had when
// the read began (control records count for the position and are not
// returned). The writers have finished by then, so that is all there is.
func readCommitted(t *testing.T, ctx context.Context, brokers, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	left := map[int32]int64{} // partition -> its last stable offset, until reached
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var out []*kgo.Record
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d records, partitions not read to their end: %v", topic, len(out), left)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	slices.SortFunc(out, func(a, b *kgo.Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out
}

func TestTopicsCommands(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	code, stdout, stderr := cli(t, ctx, "topics", "create", "-b", brokers, "payments", "--partitions", "3",
		"--config", "retention.ms=3600000", "--config", "cleanup.policy=compact")
	if code != exitOK || stdout != "created topic payments (3 partitions)\n" {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = cli(t, ctx, "topics", "create", "-b", brokers, "payments")
	if code != exitError || !strings.Contains(stderr, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("create twice: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = cli(t, ctx, "topics", "create", "-b", brokers, "bad", "--partitions", "0")
	if code != exitError || !strings.Contains(stderr, "0 partitions: want at least 1") {
		t.Fatalf("create with 0 partitions: exit %d, stderr %q", code, stderr)
	}
	// An application's internal topic is marked.
	if code, _, stderr = cli(t, ctx, "topics", "create", "-b", brokers, "app-rejected"); code != exitOK {
		t.Fatalf("create app-rejected: %s", stderr)
	}

	code, stdout, stderr = cli(t, ctx, "topics", "list", "-b", brokers)
	if code != exitOK {
		t.Fatalf("list: exit %d, stderr %q", code, stderr)
	}
	for _, re := range []string{`(?m)^TOPIC\s+PARTITIONS\s+REPLICATION\s+INTERNAL$`, `(?m)^payments\s+3\s+1\s+-$`, `(?m)^app-rejected\s+1\s+1\s+rejected$`} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("list output lacks %s:\n%s", re, stdout)
		}
	}
	code, stdout, _ = cli(t, ctx, "topics", "list", "-b", brokers, "--json")
	var listed []topics.Topic
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil || code != exitOK {
		t.Fatalf("list --json: exit %d, %v: %q", code, err, stdout)
	}
	if !containsTopic(listed, topics.Topic{Name: "payments", Partitions: 3, Replication: 1}) ||
		!containsTopic(listed, topics.Topic{Name: "app-rejected", Partitions: 1, Replication: 1, Internal: "rejected"}) {
		t.Errorf("list --json = %+v", listed)
	}

	// Records in partitions 0 and 2 show in the end offsets.
	file := writeLines(t, `{"key":"a","value":"1","partition":0}`, `{"key":"b","value":"2","partition":2}`, `{"key":"c","value":"3","partition":2}`)
	if code, _, stderr := cli(t, ctx, "produce", "-b", brokers, "-t", "payments", "--from", file); code != exitOK {
		t.Fatalf("produce: %s", stderr)
	}
	code, stdout, stderr = cli(t, ctx, "topics", "describe", "-b", brokers, "payments")
	if code != exitOK {
		t.Fatalf("describe: exit %d, stderr %q", code, stderr)
	}
	for _, re := range []string{
		`(?m)^topic payments: 3 partitions, replication 1$`,
		`(?m)^0\s+0\s+0\s+0\s+0\s+1$`,
		`(?m)^1\s+0\s+0\s+0\s+0\s+0$`,
		`(?m)^2\s+0\s+0\s+0\s+0\s+2$`,
		`(?m)^  cleanup.policy=compact \(topic\)$`,
		`(?m)^  retention.ms=3600000 \(topic\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("describe output lacks %s:\n%s", re, stdout)
		}
	}
	if strings.Contains(stdout, "segment.bytes") {
		t.Errorf("describe shows a default config:\n%s", stdout)
	}
	code, _, stderr = cli(t, ctx, "topics", "describe", "-b", brokers, "nope")
	if code != exitError || !strings.Contains(stderr, `onceflow topics describe: topic does not exist: "nope"`) {
		t.Fatalf("describe missing topic: exit %d, stderr %q", code, stderr)
	}
}

func containsTopic(ts []topics.Topic, want topics.Topic) bool {
	for _, t := range ts {
		if t == want {
			return true
		}
	}
	return false
}

func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "records.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// produce --from writes one's own records as given: keys, values in each
// form, headers in order (a null one included), partitions and timestamps;
// a read_committed reader sees them, each once.
func TestProduceFromFile(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	file := writeLines(t,
		`{"key":"order-1","value":"created","headers":{"event-id":"e-1","version":"1","trace":null},"timestamp":"2024-05-01T12:00:00Z"}`,
		``,
		`{"key_b64":"AAEC/w==","value_b64":"3q2+7w==","partition":3,"timestamp":1714564800123}`,
		`{"key":"order-2","value_json":{ "amount": 250, "items": [1, 2] },"headers":{"z":"last","a":"first"}}`,
		`{"value":"no key, round-robin"}`,
		`{"key":"order-1"}`,
	)
	for _, mode := range []string{"transactional", "idempotent"} {
		t.Run(mode, func(t *testing.T) {
			topic := "mine-" + mode
			args := []string{"produce", "-b", brokers, "-t", topic, "--partitions", "4", "--from", file}
			if mode == "transactional" {
				args = append(args, "--transactional")
			}
			code, stdout, stderr := cli(t, ctx, args...)
			wantOut := fmt.Sprintf("produced 5 records to %s (4 partitions), ", topic)
			if code != exitOK || !strings.HasPrefix(stdout, wantOut) {
				t.Fatalf("produce: exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			got := readCommitted(t, ctx, brokers, topic)
			if len(got) != 5 {
				t.Fatalf("read %d records, want 5", len(got))
			}
			byKey := map[string]*kgo.Record{}
			for _, r := range got {
				k := string(r.Key)
				if r.Value == nil {
					k += "/tombstone"
				}
				if byKey[k] != nil {
					t.Errorf("key %q twice", k)
				}
				byKey[k] = r
			}
			check := func(key string, value []byte, headers []kgo.RecordHeader, part int32, ts time.Time) {
				t.Helper()
				r := byKey[key]
				if r == nil {
					t.Errorf("no record %q", key)
					return
				}
				if !bytes.Equal(r.Value, value) || (r.Value == nil) != (value == nil) {
					t.Errorf("%q: value %q, want %q", key, r.Value, value)
				}
				if fmt.Sprint(r.Headers) != fmt.Sprint(headers) {
					t.Errorf("%q: headers %v, want %v", key, r.Headers, headers)
				}
				if r.Partition != part {
					t.Errorf("%q: partition %d, want %d", key, r.Partition, part)
				}
				if !ts.IsZero() && !r.Timestamp.Equal(ts) {
					t.Errorf("%q: timestamp %v, want %v", key, r.Timestamp, ts)
				}
			}
			hashed := func(k string) int32 { return wire.Partition([]byte(k), 0, 4) }
			check("order-1", []byte("created"), []kgo.RecordHeader{{Key: "event-id", Value: []byte("e-1")}, {Key: "version", Value: []byte("1")}, {Key: "trace"}},
				hashed("order-1"), time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
			check("\x00\x01\x02\xff", []byte{0xde, 0xad, 0xbe, 0xef}, nil, 3, time.UnixMilli(1714564800123))
			check("order-2", []byte(`{"amount":250,"items":[1,2]}`), []kgo.RecordHeader{{Key: "z", Value: []byte("last")}, {Key: "a", Value: []byte("first")}}, hashed("order-2"), time.Time{})
			check("", []byte("no key, round-robin"), nil, 3%4, time.Time{}) // the 4th record
			check("order-1/tombstone", nil, nil, hashed("order-1"), time.Time{})
		})
	}
}

// A malformed file writes nothing and names every bad line; standard
// input works as a file.
func TestProduceFromRejectsBadLines(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	file := writeLines(t,
		`{"key":"ok","value":"fine"}`,
		`{"key":"k","valeu":"typo"}`,
		`{"key":1}`,
		`{"value":"a","value_b64":"YQ=="}`,
		`{"value_b64":"not base64!"}`,
		`{"value":"x","timestamp":"yesterday"}`,
		`{"value":"x","partition":-1}`,
		`not json`,
	)
	code, _, stderr := cli(t, ctx, "produce", "-b", brokers, "-t", "bad", "--from", file)
	if code != exitError {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitError, stderr)
	}
	for _, want := range []string{`line 2: json: unknown field "valeu"`, "line 3:", "line 4: value is given in more than one form", "line 5: value_b64:",
		"line 6: timestamp:", "line 7: partition -1 is negative", "line 8:"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "line 1:") {
		t.Errorf("a good line is reported:\n%s", stderr)
	}
	code, _, stderr = cli(t, ctx, "topics", "describe", "-b", brokers, "bad")
	if code != exitError || !strings.Contains(stderr, "does not exist") {
		t.Errorf("a malformed file created or wrote the topic: exit %d, %s", code, stderr)
	}

	// A partition the topic does not have: refused before writing.
	code, _, stderr = cli(t, ctx, "produce", "-b", brokers, "-t", "small", "--partitions", "2", "--from", writeLines(t, `{"value":"a"}`, `{"value":"b","partition":2}`))
	if code != exitError || !strings.Contains(stderr, "record 2: partition 2 does not exist (the topic has 2)") {
		t.Fatalf("partition out of range: exit %d, stderr %q", code, stderr)
	}
	if n := len(readCommitted(t, ctx, brokers, "small")); n != 0 {
		t.Errorf("%d records written, want none", n)
	}

	var out, errb bytes.Buffer
	code = runIO(ctx, []string{"produce", "-b", brokers, "-t", "stdin", "--from", "-"}, strings.NewReader(`{"key":"k","value":"from stdin"}`+"\n"), &out, &errb)
	if code != exitOK || !strings.HasPrefix(out.String(), "produced 1 records to stdin") {
		t.Fatalf("--from -: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if got := readCommitted(t, ctx, brokers, "stdin"); len(got) != 1 || string(got[0].Value) != "from stdin" {
		t.Errorf("read back %v", got)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := cli(t, context.Background(), "--version")
	// A test binary has no VCS stamp; a go build in a git checkout adds
	// "(commit <rev>[, modified], <time>)" (internal/version tests that).
	if code != exitOK || !regexp.MustCompile(`^onceflow (\(devel\)|v\S+)( \(commit [0-9a-f]+(, modified)?(, \S+)?\))? go\S+\n$`).MatchString(stdout) || stderr != "" {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// Before any command's required flags are checked.
	if code, stdout2, _ := cli(t, context.Background(), "produce", "--version"); code != exitOK || stdout2 != stdout {
		t.Errorf("produce --version: exit %d, stdout %q", code, stdout2)
	}
}

func TestLogFormatJSON(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	file := writeLines(t, `{"key":"k","value":"v"}`)
	code, _, stderr := cli(t, ctx, "--log-format", "json", "--log-level", "info", "produce", "-b", brokers, "-t", "logs", "--from", file)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	messages := 0
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q (%v)", l, err)
		}
		if m["@message"] != nil && m["@level"] != nil {
			messages++
		}
	}
	if messages == 0 {
		t.Fatalf("no log lines on stderr: %q", stderr)
	}
	if !strings.Contains(stderr, `"@message":"created topic"`) {
		t.Errorf("no \"created topic\" log line: %q", stderr)
	}
	// The default stays text.
	_, _, stderr = cli(t, ctx, "--log-level", "info", "produce", "-b", brokers, "-t", "logs2", "--from", file)
	if !strings.Contains(stderr, "[INFO]  onceflow.gen: created topic") {
		t.Errorf("text log: %q", stderr)
	}
}

// The tooling commands take run's TLS and SASL flags and build their
// clients with them.
func TestToolingSecurityFlags(t *testing.T) {
	for _, args := range [][]string{
		{"produce", "-b", "127.0.0.1:1", "-t", "x", "-n", "1"},
		{"verify", "-b", "127.0.0.1:1", "-i", "a", "-o", "b"},
		{"lag", "-b", "127.0.0.1:1", "-g", "g", "-t", "a"},
		{"topics", "list", "-b", "127.0.0.1:1"},
		{"topics", "describe", "-b", "127.0.0.1:1", "a"},
		{"topics", "create", "-b", "127.0.0.1:1", "a"},
	} {
		code, _, stderr := cli(t, context.Background(), append(args, "--tls-ca", "/nonexistent")...)
		if code != exitError || !strings.Contains(stderr, "need --tls") {
			t.Errorf("%v --tls-ca without --tls: exit %d, stderr %q", args, code, stderr)
		}
		code, _, stderr = cli(t, context.Background(), append(args, "--sasl-mechanism", "PLAIN")...)
		if code != exitError || !strings.Contains(stderr, "SASL PLAIN needs a user") {
			t.Errorf("%v --sasl-mechanism PLAIN without a user: exit %d, stderr %q", args, code, stderr)
		}
	}
}
