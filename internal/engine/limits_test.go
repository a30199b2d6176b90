package engine_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/internal/kafka"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/wire"
	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// poisonSize is larger than the default max.message.bytes of the topics
// the engine writes, and within the 4 MiB of the test input topics.
const poisonSize = 2 << 20

// bigInput creates an input topic whose records may be up to 4 MiB, as a
// topic with a raised max.message.bytes.
func bigInput(env *enginetest.Env, topic string, partitions int32) {
	limit := strconv.Itoa(4 << 20)
	env.CreateTopicConfigs(topic, partitions, map[string]*string{"max.message.bytes": &limit})
}

// ordinary returns n small records for topic as env.Produce writes them:
// keys key-0..key-49, values v-<from+i>, event ids e-<from+i>.
func ordinary(topic string, from, n int) []*kgo.Record {
	rs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%d", i%50), Value: fmt.Appendf(nil, "v-%d", i),
			Headers: []kgo.RecordHeader{{Key: "event-id", Value: fmt.Appendf(nil, "e-%d", i)}}})
	}
	return rs
}

// rejectedTooLarge checks that the rejected topic holds exactly the
// records of want (by key), each with reason too-large, an error naming
// the limit, its lineage and a truncation note, cut to fit.
func rejectedTooLarge(t *testing.T, env *enginetest.Env, rejected, in string, want ...string) {
	t.Helper()
	rs := env.Read(rejected)
	if len(rs) != len(want) {
		t.Fatalf("rejected topic has %d records, want %d", len(rs), len(want))
	}
	for i, r := range rs {
		if string(r.Key) != want[i] {
			t.Errorf("rejected record %d has key %q, want %q", i, r.Key, want[i])
		}
		if got := r.Headers[wire.HeaderRejectReason]; got != wire.ReasonTooLarge {
			t.Errorf("reject reason %q, want %q", got, wire.ReasonTooLarge)
		}
		if msg := r.Headers[wire.HeaderRejectError]; !strings.Contains(msg, "exceeds the limit of") || !strings.Contains(msg, "max.message.bytes of") {
			t.Errorf("reject error %q does not name the limit", msg)
		}
		if src := r.Headers[wire.HeaderSource]; !strings.HasPrefix(src, in+"/") {
			t.Errorf("rejected record lineage %q does not name the input", src)
		}
		if note := r.Headers[wire.HeaderRejectTruncated]; note != "value="+strconv.Itoa(poisonSize) {
			t.Errorf("truncation note %q, want value=%d", note, poisonSize)
		}
		if n := len(r.Value); n < kafka.DefaultMaxMessageBytes-4096 || n > kafka.DefaultMaxMessageBytes {
			t.Errorf("rejected value cut to %d bytes; want it just within the limit %d", n, kafka.DefaultMaxMessageBytes)
		}
		if !bytes.Equal(r.Value, bytes.Repeat([]byte{'x'}, len(r.Value))) {
			t.Errorf("rejected value is not a prefix of the input's")
		}
	}
}

// An input record whose copy is larger than the output topic accepts (the
// input topic allows 4 MiB, the output the default 1 MiB) is rejected as
// too-large, cut to fit the rejected topic; the records around it, in the
// same transactions, each reach the output once; no transaction aborts.
func TestOversizedOutputIsRejectedNotRetried(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	bigInput(env, in, 2)
	rs := ordinary(in, 0, 500)
	rs = append(rs, &kgo.Record{Topic: in, Partition: 0, Key: []byte("poison"), Value: bytes.Repeat([]byte{'x'}, poisonSize)})
	rs = append(rs, ordinary(in, 500, 500)...)
	env.ProduceLarge(rs...)

	r := env.Start(env.Config(app, "r1"), compile(t, copyex.Topology(in, out)))
	env.WaitCount(out, 1000, 30*time.Second)
	env.WaitCount(app+"-rejected", 1, 30*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	rejectedTooLarge(t, env, app+"-rejected", in, "poison")
	if n := len(env.Read(out)); n != 1000 {
		t.Errorf("output has %d records, want 1000", n)
	}
	rep := env.VerifySources(in, out, app+"-rejected")
	if rep.Input != 1001 {
		t.Errorf("input %d records, want 1001", rep.Input)
	}
	s := r.E.Stats()
	t.Logf("sessions %d, aborted %d, committed %d", s.Sessions, s.Aborted, s.Committed)
	if s.Aborted != 0 || s.Sessions != 1 || s.Rejected != 1 {
		t.Errorf("stats %+v: want no abort, one session, one rejection", s)
	}
}

// appendTopology keeps, per key, the concatenation of every value seen
// (an aggregate that grows) and writes its length.
func appendTopology(in, out string) *topology.Topology {
	tp := topology.New("append")
	src := topology.Source(tp, in, serde.String(), serde.Bytes())
	agg := topology.Reduce(src, "concat", serde.String(), serde.Bytes(),
		func() []byte { return nil },
		func(acc []byte, _ string, v []byte) ([]byte, error) { return append(acc, v...), nil })
	lengths := topology.MapValues(agg, func(v []byte) (int64, error) { return int64(len(v)), nil })
	topology.To(lengths, out, serde.String(), serde.Int64())
	return tp
}

// A state change whose changelog record would exceed the changelog's
// limit rejects its input record without the write; the aggregate of that
// key goes on from the value before; every other record is counted once.
func TestOversizedStateChangeIsRejected(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	bigInput(env, in, 2)
	rs := ordinary(in, 0, 300)
	rs = append(rs, &kgo.Record{Topic: in, Key: []byte("key-7"), Value: bytes.Repeat([]byte{'x'}, poisonSize)})
	rs = append(rs, ordinary(in, 300, 300)...)
	env.ProduceLarge(rs...)

	cfg := stateConfig(env, app, "r1", t.TempDir())
	r := env.Start(cfg, compile(t, appendTopology(in, out)))
	env.WaitCount(out, 600, 30*time.Second)
	env.WaitCount(app+"-rejected", 1, 30*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	rejectedTooLarge(t, env, app+"-rejected", in, "key-7")
	want := map[string]int64{}
	for _, rec := range rs {
		if len(rec.Value) < 100 {
			want[string(rec.Key)] += int64(len(rec.Value))
		}
	}
	outs := env.Read(out)
	if len(outs) != 600 {
		t.Errorf("output has %d records, want 600", len(outs))
	}
	got := map[string]int64{}
	for _, o := range outs {
		got[string(o.Key)] = int64(decodeInt64(o.Value))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("key %s: aggregate length %d, want %d", k, got[k], w)
		}
	}
	changelog := env.Read(app + "-concat-changelog")
	for _, c := range changelog {
		if len(c.Value) >= poisonSize {
			t.Errorf("changelog holds a %d-byte record", len(c.Value))
		}
	}
	s := r.E.Stats()
	t.Logf("sessions %d, aborted %d, committed %d, changelog records %d", s.Sessions, s.Aborted, s.Committed, len(changelog))
	if s.Aborted != 0 || s.Sessions != 1 {
		t.Errorf("stats %+v: want no abort, one session", s)
	}
}

func decodeInt64(b []byte) uint64 {
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return n
}

// The input topic of a stateful topology grows from 2 to 4 partitions
// between two runs: the changelog grows with it, and the tasks of the new
// partitions run (each input once in the output) instead of failing every
// transaction or refusing to start.
func TestAddedInputPartitionsGrowTheChangelog(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	g := compile(t, countTopology(in, out))
	dir := t.TempDir()
	env.Produce(in, 0, 400)
	r := env.Start(stateConfig(env, app, "r1", dir), g)
	env.WaitCount(out, 400, 30*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}

	env.GrowTopic(in, 4)
	env.ProduceLarge(ordinary(in, 400, 400)...) // a new client: it sees 4 partitions
	r = env.Start(stateConfig(env, app, "r1", dir), g)
	env.WaitCount(out, 800, 30*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatalf("run after the input grew: %v", err)
	}
	if n := env.Partitions(app + "-counts-changelog"); n != 4 {
		t.Errorf("changelog has %d partitions, want 4", n)
	}
	rep := env.VerifySources(in, out)
	if rep.Input != 800 {
		t.Errorf("input %d records, want 800", rep.Input)
	}
	perPart := map[int32]int{}
	for _, rec := range env.Read(in) {
		perPart[rec.Partition]++
	}
	if perPart[2] == 0 || perPart[3] == 0 {
		t.Errorf("no input on the added partitions: %v", perPart)
	}
}

// Input partitions added while replicas run reach them through a
// rebalance: the session that claims them grows the changelog before
// restoring, instead of failing its restore at every rejoin.
func TestInputPartitionsAddedWhileRunning(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 2)
	g := compile(t, countTopology(in, out))
	env.Produce(in, 0, 200)
	r1 := env.Start(stateConfig(env, app, "r1", t.TempDir()), g)
	r2 := env.Start(stateConfig(env, app, "r2", t.TempDir()), g)
	env.WaitCount(out, 200, 30*time.Second)
	waitFor(t, "both members in the group", 60*time.Second, func() bool { return len(env.Members(app)) == 2 && r1.E.Ready() && r2.E.Ready() })

	env.GrowTopic(in, 4)
	env.ProduceLarge(ordinary(in, 200, 400)...)
	// r2 leaves: the group rebalances and r1's next session claims every
	// partition, the added ones too (no replica starts, so none grows the
	// changelog at start-up).
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	env.WaitCount(out, 600, 60*time.Second)
	if err := r1.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if n := env.Partitions(app + "-counts-changelog"); n != 4 {
		t.Errorf("changelog has %d partitions, want 4", n)
	}
	env.VerifySources(in, out)
	t.Logf("r1 %+v", r1.E.Stats())
}
