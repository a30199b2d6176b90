package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	copyex "github.com/onceflow/onceflow/examples/copy"
	"github.com/onceflow/onceflow/examples/orders"
	"github.com/onceflow/onceflow/internal/testrig/enginetest"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

// outcome is where one input record must go in one application: its
// output topic (reason "") or its rejected topic with that reason.
type outcome struct {
	reason string
	cut    bool // the rejected copy is cut to fit (onceflow-reject-truncated)
}

var (
	toOutput    = outcome{}
	undecodable = outcome{reason: wire.ReasonUndecodable}
	procError   = outcome{reason: wire.ReasonProcessingError}
	tooLarge    = outcome{reason: wire.ReasonTooLarge, cut: true}
	badStamp    = outcome{reason: wire.ReasonTimestampOutOfRange}
	// undecodable, and too large for the rejected topic: cut to fit.
	tooLargeUndecodable = outcome{reason: wire.ReasonUndecodable, cut: true}
)

// badCase is one input record and where it must go in the orders
// application and in the copy application, which both read it.
type badCase struct {
	name   string
	rec    func(topic string, i int) *kgo.Record
	orders outcome
	copy   outcome
	// check, when set, looks at the copy application's output record.
	check func(t *testing.T, in *kgo.Record, out verify.Record)
}

// orderJSON is a valid orders event i, its fields overridden by extra
// (raw JSON members appended after the defaults; the last one wins).
func orderJSON(i int, extra string) []byte {
	s := fmt.Sprintf(`{"event_id":"bad-%d","order_id":"bo-%d","customer":"bc-%d","amount":%d,"version":1`, i, i, i%7, i)
	if extra != "" {
		s += "," + extra
	}
	return []byte(s + "}")
}

// badRecord is a valid orders input record for case i with the given
// value, key "bc-<i mod 7>" and header event-id "bad-<i>".
func badRecord(topic string, i int, value []byte) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "bc-%d", i%7), Value: value,
		Headers: []kgo.RecordHeader{{Key: "event-id", Value: fmt.Appendf(nil, "bad-%d", i)}, {Key: "version", Value: []byte("1")}}}
}

// withValue is a case record with the value given.
func withValue(v []byte) func(string, int) *kgo.Record {
	return func(topic string, i int) *kgo.Record { return badRecord(topic, i, v) }
}

// withJSON is a case record whose value is the valid event with extra
// JSON members (see orderJSON).
func withJSON(extra string) func(string, int) *kgo.Record {
	return func(topic string, i int) *kgo.Record { return badRecord(topic, i, orderJSON(i, extra)) }
}

// good builds a valid record for case i, then lets edit change it.
func good(edit func(r *kgo.Record)) func(string, int) *kgo.Record {
	return func(topic string, i int) *kgo.Record {
		r := badRecord(topic, i, orderJSON(i, ""))
		edit(r)
		return r
	}
}

const mib = 1 << 20

// badCases is the table of bad inputs. The output topics accept 1 MiB
// records stamped up to an hour ahead of the clock; the input topic takes
// 4 MiB records stamped at any time.
var badCases = []badCase{
	{name: "malformed JSON", rec: withValue([]byte(`{"event_id":"x","amount":`)), orders: undecodable, copy: toOutput},
	{name: "not JSON (binary)", rec: withValue([]byte{0, 1, 2, 0xff}), orders: undecodable, copy: toOutput},
	{name: "JSON with trailing data", rec: func(tp string, i int) *kgo.Record { return badRecord(tp, i, append(orderJSON(i, ""), " {}"...)) },
		orders: undecodable, copy: toOutput},
	{name: "wrong type: amount a string", rec: withJSON(`"amount":"12"`),
		orders: undecodable, copy: toOutput},
	{name: "wrong type: version negative", rec: withJSON(`"version":-1`),
		orders: undecodable, copy: toOutput},
	{name: "wrong type: amount fractional", rec: withJSON(`"amount":1.5`),
		orders: undecodable, copy: toOutput},
	{name: "wrong type: a JSON array", rec: withValue([]byte(`[1,2,3]`)), orders: undecodable, copy: toOutput},
	{name: "JSON null literal", rec: withValue([]byte(`null`)), orders: undecodable, copy: toOutput},
	{name: "empty JSON object", rec: withValue([]byte(`{}`)), orders: undecodable, copy: toOutput},
	{name: "no order_id", rec: withJSON(`"order_id":""`),
		orders: undecodable, copy: toOutput},
	{name: "no customer", rec: withJSON(`"customer":""`),
		orders: undecodable, copy: toOutput},
	{name: "empty value (zero bytes)", rec: withValue([]byte{}), orders: undecodable, copy: toOutput},
	{name: "null value (tombstone)", rec: withValue(nil), orders: undecodable, copy: toOutput,
		check: func(t *testing.T, _ *kgo.Record, out verify.Record) {
			if out.Value != nil {
				t.Errorf("tombstone copied as a %d-byte value, want null", len(out.Value))
			}
		}},
	{name: "null key", rec: good(func(r *kgo.Record) { r.Key = nil }), orders: toOutput, copy: toOutput,
		check: func(t *testing.T, _ *kgo.Record, out verify.Record) {
			if out.Key != nil {
				t.Errorf("null key copied as %q, want null", out.Key)
			}
		}},
	{name: "null key and null value", rec: func(tp string, i int) *kgo.Record {
		r := badRecord(tp, i, nil)
		r.Key = nil
		return r
	}, orders: undecodable, copy: toOutput},
	{name: "no event-id header", rec: good(func(r *kgo.Record) { r.Headers = r.Headers[1:] }), orders: procError, copy: toOutput},
	{name: "empty event-id header", rec: good(func(r *kgo.Record) { r.Headers[0].Value = nil }), orders: procError, copy: toOutput},
	{name: "event id of 1.5 MiB (a dedup key larger than the changelog accepts)", rec: good(func(r *kgo.Record) { r.Headers[0].Value = bytes.Repeat([]byte{'e'}, 3*mib/2) }),
		orders: tooLarge, copy: tooLarge},
	{name: "no version header", rec: good(func(r *kgo.Record) { r.Headers = r.Headers[:1] }), orders: toOutput, copy: toOutput},
	{name: "empty version header", rec: good(func(r *kgo.Record) { r.Headers[1].Value = nil }), orders: toOutput, copy: toOutput},
	{name: "no version in the value (version 0)", rec: func(tp string, i int) *kgo.Record {
		return badRecord(tp, i, []byte(fmt.Sprintf(`{"event_id":"bad-%d","order_id":"bo-%d","customer":"bc-1","amount":3}`, i, i)))
	}, orders: toOutput, copy: toOutput},
	{name: "invalid UTF-8 in a JSON string", rec: withJSON("\"customer\":\"c\xff\xfe\""),
		orders: undecodable, copy: toOutput, check: sameBytes},
	{name: "invalid UTF-8 key", rec: good(func(r *kgo.Record) { r.Key = []byte("k\xff\xc3") }), orders: toOutput, copy: toOutput, check: sameBytes},
	{name: "invalid UTF-8 event id", rec: good(func(r *kgo.Record) { r.Headers[0].Value = append(r.Headers[0].Value, 0xff) }), orders: toOutput, copy: toOutput},
	{name: "huge key (1.5 MiB)", rec: good(func(r *kgo.Record) { r.Key = bytes.Repeat([]byte{'k'}, 3*mib/2) }), orders: toOutput, copy: tooLarge},
	{name: "value larger than the output accepts (2 MiB)", rec: withJSON(`"padding":"` + strings.Repeat("p", 2*mib) + `"`), orders: toOutput, copy: tooLarge},
	{name: "undecodable, its rejected copy too large (2 MiB)", rec: withValue(bytes.Repeat([]byte{'x'}, 2*mib)), orders: tooLargeUndecodable, copy: tooLarge},
	{name: "header larger than the output accepts (1.5 MiB)", rec: good(func(r *kgo.Record) {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: "trace", Value: bytes.Repeat([]byte{'h'}, 3*mib/2)})
	}), orders: tooLarge, copy: tooLarge},
	{name: "state key larger than the changelog accepts (customer of 1.5 MiB)", rec: withJSON(`"customer":"` + strings.Repeat("c", 3*mib/2) + `"`), orders: tooLarge, copy: tooLarge},
	{name: "timestamp 50 years ahead", rec: good(func(r *kgo.Record) { r.Timestamp = time.Now().AddDate(50, 0, 0) }), orders: badStamp, copy: badStamp},
	{name: "no timestamp (-1)", rec: good(func(r *kgo.Record) { r.Timestamp = time.UnixMilli(-1) }), orders: toOutput, copy: toOutput,
		check: func(t *testing.T, _ *kgo.Record, out verify.Record) {
			if d := time.Since(out.Timestamp); d < -time.Minute || d > 10*time.Minute {
				t.Errorf("copy stamped %v, want the clock", out.Timestamp)
			}
		}},
	{name: "timestamp in 1971", rec: good(func(r *kgo.Record) { r.Timestamp = time.Date(1971, 1, 1, 0, 0, 0, 0, time.UTC) }), orders: toOutput, copy: toOutput,
		check: sameStamp},
}

// sameBytes checks that the copy kept the input's key and value byte for
// byte.
func sameBytes(t *testing.T, in *kgo.Record, out verify.Record) {
	t.Helper()
	if !bytes.Equal(in.Key, out.Key) || !bytes.Equal(in.Value, out.Value) {
		t.Errorf("copy changed the bytes: key %q value %q, want key %q value %q", out.Key, out.Value, in.Key, in.Value)
	}
}

// sameStamp checks that the copy kept the input's timestamp.
func sameStamp(t *testing.T, in *kgo.Record, out verify.Record) {
	t.Helper()
	if !out.Timestamp.Equal(in.Timestamp) {
		t.Errorf("copy stamped %v, want the input's %v", out.Timestamp, in.Timestamp)
	}
}

// goodOrder is the valid orders event g, unique event and order ids.
func goodOrder(topic string, g int) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "c-%d", g%11),
		Value:   fmt.Appendf(nil, `{"event_id":"g-%d","order_id":"o-%d","customer":"c-%d","amount":%d,"version":1}`, g, g, g%11, g%100),
		Headers: []kgo.RecordHeader{{Key: "event-id", Value: fmt.Appendf(nil, "g-%d", g)}, {Key: "version", Value: []byte("1")}}}
}

// Every bad input of the table, among good records on three partitions,
// goes through the orders topology and the copy topology (two applications
// reading the same input): each bad record lands once where the table says
// (the output, or <app-id>-rejected with that reason, cut to fit when its
// copy would be too large), every good record reaches the output exactly
// once, the rejections are counted, no transaction aborts, and every input
// partition is consumed to its end (none stalled). Runs on the embedded
// broker, and on real Kafka with ONCEFLOW_KAFKA_BROKERS.
func TestBadInputGoesWhereTheTableSays(t *testing.T) {
	env := enginetest.New(t)
	in := env.Name("in")
	ordersOut, copyOut := env.Name("orders-out"), env.Name("copy-out")
	ordersApp, copyApp := env.Name("orders"), env.Name("copy")
	limit, forever, hour := strconv.Itoa(4*mib), "9223372036854775807", "3600000"
	env.CreateTopicConfigs(in, 3, map[string]*string{"max.message.bytes": &limit, "message.timestamp.after.max.ms": &forever})
	for _, out := range []string{ordersOut, copyOut} {
		env.CreateTopicConfigs(out, 3, map[string]*string{"message.timestamp.after.max.ms": &hour})
	}

	// Good records around every bad one, so each partition holds bad
	// records with good ones after them.
	var rs []*kgo.Record
	bad := map[*kgo.Record]int{}
	g := 0
	for i, c := range badCases {
		for range 4 {
			rs = append(rs, goodOrder(in, g))
			g++
		}
		r := c.rec(in, i)
		bad[r] = i
		rs = append(rs, r)
	}
	for range 60 {
		rs = append(rs, goodOrder(in, g))
		g++
	}
	env.ProduceLarge(rs...)
	t.Logf("%d records (%d bad) on partitions %v", len(rs), len(badCases), env.EndOffsets(in))

	apps := []struct {
		app, out string
		want     func(badCase) outcome
		r        *enginetest.Replica
	}{
		{app: ordersApp, out: ordersOut, want: func(c badCase) outcome { return c.orders }},
		{app: copyApp, out: copyOut, want: func(c badCase) outcome { return c.copy }},
	}
	apps[0].r = env.Start(stateConfig(env, ordersApp, "r1", t.TempDir()), compile(t, orders.Topology(in, ordersOut)))
	apps[1].r = env.Start(env.Config(copyApp, "r1"), compile(t, copyex.Topology(in, copyOut)))
	end := env.EndOffsets(in)
	for _, a := range apps {
		rejected := 0
		for _, c := range badCases {
			if a.want(c).reason != "" {
				rejected++
			}
		}
		env.WaitCount(a.out, len(rs)-rejected, 90*time.Second)
		env.WaitCount(a.app+"-rejected", rejected, 90*time.Second)
		waitFor(t, a.app+" committed every input partition to its end", 30*time.Second, func() bool {
			got := env.CommittedOffsets(a.app, in)
			for p, o := range end {
				if got[p] != o {
					return false
				}
			}
			return true
		})
	}

	for _, a := range apps {
		if err, stopped := a.r.Wait(0); stopped {
			t.Fatalf("%s stopped: %v", a.app, err)
		}
		if err := a.r.Stop(); err != nil {
			t.Fatalf("%s: %v", a.app, err)
		}
		outs, rejected := env.Read(a.out), env.Read(a.app+"-rejected")
		where := map[string][]verify.Record{} // lineage -> records in output and rejected
		for _, o := range append(outs, rejected...) {
			src := o.Headers[wire.HeaderSource]
			where[src] = append(where[src], o)
		}
		wantRejected := 0
		for _, r := range rs {
			src := wire.Source(r.Topic, r.Partition, r.Offset)
			got := where[src]
			i, isBad := bad[r]
			name, want := "good record "+src, toOutput
			if isBad {
				name, want = badCases[i].name, a.want(badCases[i])
			}
			if len(got) != 1 {
				t.Errorf("%s: %s: %d records in the output and rejected topics, want 1", a.app, name, len(got))
				continue
			}
			o := got[0]
			if want.reason != "" {
				wantRejected++
			}
			wantTopic := a.out
			if want.reason != "" {
				wantTopic = a.app + "-rejected"
			}
			if o.Topic != wantTopic {
				t.Errorf("%s: %s: went to %s (reason %q, error %q), want reason %q", a.app, name, o.Topic,
					o.Headers[wire.HeaderRejectReason], o.Headers[wire.HeaderRejectError], want.reason)
				continue
			}
			if want.reason == "" {
				if isBad && a.app == copyApp && badCases[i].check != nil {
					badCases[i].check(t, r, o)
				}
				continue
			}
			if got := o.Headers[wire.HeaderRejectReason]; got != want.reason {
				t.Errorf("%s: %s: reason %q (error %q), want %q", a.app, name, got, o.Headers[wire.HeaderRejectError], want.reason)
			}
			if o.Headers[wire.HeaderRejectError] == "" {
				t.Errorf("%s: %s: rejected without an error", a.app, name)
			}
			if _, cut := o.Headers[wire.HeaderRejectTruncated]; cut != want.cut {
				t.Errorf("%s: %s: truncated %v (%q), want %v", a.app, name, cut, o.Headers[wire.HeaderRejectTruncated], want.cut)
			}
			if !want.cut && (!bytes.Equal(o.Key, r.Key) || !bytes.Equal(o.Value, r.Value)) {
				t.Errorf("%s: %s: the rejected copy's key or value differs from the input's", a.app, name)
			}
			t.Logf("%s: %-60s -> %s (%s)", a.app, name, want.reason, o.Headers[wire.HeaderRejectError])
		}
		if n := len(outs) + len(rejected); n != len(rs) {
			t.Errorf("%s: %d records in the output and rejected topics, want %d", a.app, n, len(rs))
		}
		s := a.r.E.Stats()
		if s.Rejected != int64(wantRejected) || s.RecordsIn != int64(len(rs)) || s.Aborted != 0 {
			t.Errorf("%s: stats %+v: want %d rejected, %d in, none aborted", a.app, s, wantRejected, len(rs))
		}
	}
}

// unknownCodec is a compression codec id Kafka does not define (0 none,
// 1 gzip, 2 snappy, 3 lz4, 4 zstd).
const unknownCodec = 5

// A record batch whose attributes name an unknown compression codec never
// enters a topic: the broker validates the codec on produce and refuses
// the batch (the embedded broker with CORRUPT_MESSAGE; Kafka 4.4 with
// UNKNOWN_SERVER_ERROR, logging "IllegalArgumentException: Unknown
// compression type id: 5"), so no replica ever fetches one. (Had one been
// fetched, sarama would fail to decode the whole fetch response, "invalid
// compression specified (5)", and retry it.)
func TestUnknownCompressionIsRefusedByTheBroker(t *testing.T) {
	env := enginetest.New(t)
	in := env.Name("in")
	env.CreateTopic(in, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = craftBatch(unknownCodec, []byte("not compressed by any codec"))
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: in, TopicID: topics[in].ID, Partitions: []kmsg.ProduceRequestTopicPartition{part}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce request: %v", err)
	}
	code := resp.Topics[0].Partitions[0].ErrorCode
	t.Logf("broker answered %v", kerr.ErrorForCode(code))
	if code == 0 {
		t.Fatalf("the broker took a batch compressed with unknown codec %d", unknownCodec)
	}
	if end := env.EndOffsets(in); end[0] != 0 {
		t.Errorf("end offset %d after a refused batch, want 0", end[0])
	}
}

// craftBatch is a one-record v2 record batch with the compression codec
// bits set to codec and records as its (compressed) records, its length
// and CRC-32C right, so the codec is the only thing wrong with it.
func craftBatch(codec int16, records []byte) []byte {
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{Magic: 2, Attributes: codec, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: records}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// A through topic is an ordinary topic others may write to. A record
// written there by another producer with a lineage header longer than any
// lineage (here 700 KiB, over the 512 KiB the output accepts) must not
// pass for the record's lineage: its copy would not fit the output, nor
// its rejected copy the rejected topic (the lineage is never cut), and the
// replica would abort on it until it stopped. It is taken for what it is,
// a record of the through topic, and flows on with that lineage.
func TestForeignLineageHeaderIsNotTrusted(t *testing.T) {
	env := enginetest.New(t)
	in, mid, out, app := env.Name("in"), env.Name("mid"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	env.CreateTopic(mid, 1)
	half := strconv.Itoa(512 << 10)
	env.CreateTopicConfigs(out, 1, map[string]*string{"max.message.bytes": &half})
	env.Produce(in, 0, 20)
	env.ProduceLarge(&kgo.Record{Topic: mid, Key: []byte("foreign"), Value: []byte("written by another producer"),
		Headers: []kgo.RecordHeader{{Key: wire.HeaderSource, Value: bytes.Repeat([]byte{'s'}, 700<<10)}}})

	r := env.Start(env.Config(app, "r1"), compile(t, throughTopology(in, mid, out)))
	env.WaitCount(out, 21, 30*time.Second)
	if err, stopped := r.Wait(0); stopped {
		t.Fatalf("the replica stopped: %v", err)
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	var foreign []verify.Record
	for _, o := range env.Read(out) {
		if string(o.Key) == "foreign" {
			foreign = append(foreign, o)
		}
	}
	if len(foreign) != 1 {
		t.Fatalf("%d outputs of the foreign record, want 1", len(foreign))
	}
	if got, want := foreign[0].Headers[wire.HeaderSource], mid+"/0/0"; got != want {
		t.Errorf("lineage of the foreign record's output %.40q, want %s", got, want)
	}
	if s := r.E.Stats(); s.Aborted != 0 || s.Rejected != 0 {
		t.Errorf("stats %+v: want no abort, no rejection", s)
	}
}

// Records without a timestamp (-1, which Kafka keeps as "none") are copied
// and stamped when produced, like a producer record without one. sarama
// cannot encode a time before 1970: before, an output stamped -1 failed
// its whole produce request, every transaction holding it aborted and the
// replica stopped.
func TestNoTimestampIsStampedByTheProducer(t *testing.T) {
	env := enginetest.New(t)
	in, out, app := env.Name("in"), env.Name("out"), env.Name("app")
	env.CreateTopic(in, 1)
	// In one batch after a record with a timestamp, so they read back as
	// one millisecond before 1970; one record per transaction, so each
	// starts a batch of its own on the way out.
	var rs []*kgo.Record
	for i := range 10 {
		ts := time.UnixMilli(-1)
		if i == 0 {
			ts = time.Now()
		}
		rs = append(rs, &kgo.Record{Topic: in, Key: []byte("k"), Value: fmt.Appendf(nil, "v-%d", i), Timestamp: ts})
	}
	env.ProduceRecords(rs...)
	before := time.Now().Add(-time.Minute)
	cfg := env.Config(app, "r1")
	cfg.CommitRecords = 1
	r := env.Start(cfg, compile(t, copyex.Topology(in, out)))
	env.WaitCount(out, 10, 30*time.Second)
	if err := r.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, o := range env.Read(out) {
		if o.Timestamp.Before(before) || o.Timestamp.After(time.Now().Add(time.Minute)) {
			t.Errorf("output %s stamped %v, want the clock", o.Value, o.Timestamp)
		}
	}
	if s := r.E.Stats(); s.Aborted != 0 {
		t.Errorf("stats %+v: want no abort", s)
	}
}
