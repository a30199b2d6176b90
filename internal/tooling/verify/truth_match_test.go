package verify_test

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/tooling/verify"
	"github.com/onceflow/onceflow/internal/wire"
)

func orderRec(key, id, orderID string, amount int64, version uint64) gen.OrderRecord {
	b, err := json.Marshal(gen.OrderEvent{EventID: id, OrderID: orderID, Customer: key, Amount: amount, Version: version})
	if err != nil {
		panic(err)
	}
	return gen.OrderRecord{Key: key, Value: b, EventID: id, Version: version}
}

// smallInput is the hand-checked input of the truth tests: customer c-n
// in partition n-1, a duplicate, a conflict, a stale version and a
// duplicate of the first record of c-3; want is what the orders topology
// does with each record.
var smallInput = []struct {
	rec  gen.OrderRecord
	want gen.OrderOutcome
}{
	{orderRec("c-1", "e1", "o1", 100, 1), gen.OrderOutcome{Total: 100}},
	{orderRec("c-1", "e2", "o2", 50, 1), gen.OrderOutcome{Total: 150}},
	{orderRec("c-2", "e5", "o3", 10, 1), gen.OrderOutcome{Total: 10}},
	{orderRec("c-1", "e1", "o1", 100, 1), gen.OrderOutcome{Reason: wire.ReasonDuplicate}},
	{orderRec("c-1", "e3", "o1", 120, 3), gen.OrderOutcome{Total: 170}},
	{orderRec("c-2", "e5", "o3", 11, 1), gen.OrderOutcome{Reason: wire.ReasonConflict}},
	{orderRec("c-3", "e7", "o4", 5, 1), gen.OrderOutcome{Total: 5}},
	{orderRec("c-1", "e4", "o1", 999, 2), gen.OrderOutcome{Reason: wire.ReasonStale}},
	{orderRec("c-2", "e6", "o3", 20, 2), gen.OrderOutcome{Total: 20}},
	{orderRec("c-3", "e7", "o4", 5, 1), gen.OrderOutcome{Reason: wire.ReasonDuplicate}},
}

var smallTruth = gen.Truth{
	Topic: "in", Partitions: 3, Customers: 3,
	EventsTotal: 10, EventsUnique: 7, DuplicatesInjected: 2, ConflictsInjected: 1, StaleInjected: 1, Accepted: 6,
	Totals: map[string]int64{"c-1": 170, "c-2": 20, "c-3": 5},
}

// The hand-checked table and the generator's simulator agree.
func TestSmallInputSimulated(t *testing.T) {
	var recs []gen.OrderRecord
	for _, in := range smallInput {
		recs = append(recs, in.rec)
	}
	truth, outcomes := gen.SimulateOrders(recs)
	for i, in := range smallInput {
		if outcomes[i] != in.want {
			t.Errorf("record %d: simulated %+v, want %+v", i, outcomes[i], in.want)
		}
	}
	want := smallTruth
	want.Topic, want.Partitions, want.Customers = "", 0, 0
	if !reflect.DeepEqual(truth, want) {
		t.Errorf("simulated truth %+v, want %+v", truth, want)
	}
	if err := smallTruth.Check(); err != nil {
		t.Error(err)
	}
}

// smallInputRecords returns smallInput as records for topic, customer c-n
// in partition n-1 (so on a topic of three partitions).
func smallInputRecords(topic string) []*kgo.Record {
	var out []*kgo.Record
	for _, in := range smallInput {
		out = append(out, &kgo.Record{
			Topic:     topic,
			Partition: int32(in.rec.Key[len(in.rec.Key)-1] - '1'),
			Key:       []byte(in.rec.Key),
			Value:     in.rec.Value,
			Headers: []kgo.RecordHeader{
				{Key: gen.HeaderEventID, Value: []byte(in.rec.EventID)},
			},
		})
	}
	return out
}

// playOrders is the orders topology for tests: for each input record (with
// its partition and offset) and its outcome, the output record (to out,
// two partitions, by customer) or the rejected record (to rej, one
// partition) the engine writes.
func playOrders(in []verify.Record, outcomes []gen.OrderOutcome, out, rej string) (outputs, rejections []*kgo.Record) {
	for i, r := range in {
		src := []byte(wire.Source(r.Topic, r.Partition, r.Offset))
		o := outcomes[i]
		if o.Reason == "" {
			outputs = append(outputs, &kgo.Record{
				Topic:     out,
				Partition: int32(r.Key[len(r.Key)-1]) % 2,
				Key:       r.Key,
				Value:     binary.BigEndian.AppendUint64(nil, uint64(o.Total)),
				Headers:   []kgo.RecordHeader{{Key: wire.HeaderSource, Value: src}},
			})
			continue
		}
		rejections = append(rejections, &kgo.Record{
			Topic: rej,
			Key:   r.Key,
			Value: r.Value,
			Headers: []kgo.RecordHeader{
				{Key: gen.HeaderEventID, Value: []byte(r.Headers[gen.HeaderEventID])},
				{Key: wire.HeaderRejectReason, Value: []byte(o.Reason)},
				{Key: wire.HeaderSource, Value: src},
				{Key: wire.HeaderRejectError, Value: []byte("orders: " + o.Reason)},
			},
		})
	}
	return outputs, rejections
}

// committed gives rs the offsets a broker would, in slice order per
// partition, as ReadAll returns them.
func committed(rs []*kgo.Record) []verify.Record {
	next := map[int32]int64{}
	out := make([]verify.Record, 0, len(rs))
	for _, r := range rs {
		vr := verify.Record{Topic: r.Topic, Partition: r.Partition, Offset: next[r.Partition], Key: r.Key, Value: r.Value,
			Headers: map[string]string{}}
		for _, h := range r.Headers {
			vr.Headers[h.Key] = string(h.Value)
		}
		next[r.Partition]++
		out = append(out, vr)
	}
	return out
}

type truthScenario struct {
	truth   gen.Truth
	in      []verify.Record
	out     []*kgo.Record
	rejects []*kgo.Record
	// reversed hands MatchTruth every topic's records in reverse order.
	reversed bool
}

// newTruthScenario is smallInput on topic "in" with the outputs and
// rejections of a correct topology.
func newTruthScenario() *truthScenario {
	in := committed(smallInputRecords("in")) // in smallInput order
	var outcomes []gen.OrderOutcome
	for _, s := range smallInput {
		outcomes = append(outcomes, s.want)
	}
	truth := smallTruth
	truth.Totals = maps.Clone(smallTruth.Totals)
	out, rej := playOrders(in, outcomes, "out", "rej")
	return &truthScenario{truth: truth, in: in, out: out, rejects: rej}
}

// find returns the index in recs of the record whose source is input i.
func (s *truthScenario) find(recs []*kgo.Record, i int) int {
	src := wire.Source(s.in[i].Topic, s.in[i].Partition, s.in[i].Offset)
	for j, r := range recs {
		for _, h := range r.Headers {
			if h.Key == wire.HeaderSource && string(h.Value) == src {
				return j
			}
		}
	}
	panic("no record with source " + src)
}

// input returns the index in s.in of the first record for customer key
// with event id and amount.
func (s *truthScenario) input(key, eventID string, amount int64) int {
	for i, r := range s.in {
		var ev gen.OrderEvent
		if err := json.Unmarshal(r.Value, &ev); err != nil {
			panic(err)
		}
		if string(r.Key) == key && ev.EventID == eventID && ev.Amount == amount {
			return i
		}
	}
	panic("no input " + key + "/" + eventID)
}

func setHeader(r *kgo.Record, key, value string) {
	for i := range r.Headers {
		if r.Headers[i].Key == key {
			r.Headers[i].Value = []byte(value)
			return
		}
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: []byte(value)})
}

func dropHeader(r *kgo.Record, key string) {
	r.Headers = slices.DeleteFunc(r.Headers, func(h kgo.RecordHeader) bool { return h.Key == key })
}

func clone(r *kgo.Record) *kgo.Record {
	c := *r
	c.Headers = slices.Clone(r.Headers)
	return &c
}

func TestMatchTruth(t *testing.T) {
	type want struct {
		missing, duplicates, unexpected         int
		input, accepted, rejections, totals, ok bool
		rejected                                map[string]int
		example                                 string
	}
	good := want{input: true, accepted: true, rejections: true, totals: true, ok: true}
	for _, tc := range []struct {
		name string
		mod  func(s *truthScenario)
		want want
	}{
		{"correct", func(*truthScenario) {}, good},
		{"records in any slice order", func(s *truthScenario) { s.reversed = true }, good},
		{"last output of a customer missing", func(s *truthScenario) {
			s.out = slices.Delete(s.out, s.find(s.out, s.input("c-1", "e3", 120)), s.find(s.out, s.input("c-1", "e3", 120))+1)
		}, want{missing: 1, input: true, rejections: true, example: `"c-1": last output 150, want 170`}},
		{"an earlier output doubled", func(s *truthScenario) {
			j := s.find(s.out, s.input("c-2", "e5", 10))
			s.out = slices.Insert(s.out, j+1, clone(s.out[j]))
		}, want{duplicates: 1, input: true, rejections: true, totals: true}},
		{"one output missing, another doubled: the counts still match", func(s *truthScenario) {
			j := s.find(s.out, s.input("c-2", "e5", 10))
			s.out = slices.Insert(s.out, j+1, clone(s.out[j]))
			k := s.find(s.out, s.input("c-1", "e3", 120))
			s.out = slices.Delete(s.out, k, k+1)
		}, want{missing: 1, duplicates: 1, input: true, accepted: true, rejections: true, example: `"c-1": last output 150, want 170`}},
		{"a rejection missing", func(s *truthScenario) {
			j := s.find(s.rejects, s.input("c-2", "e5", 11))
			s.rejects = slices.Delete(s.rejects, j, j+1)
		}, want{missing: 1, input: true, accepted: true, totals: true,
			rejected: map[string]int{"duplicate": 2, "stale": 1}}},
		{"stale reported as duplicate", func(s *truthScenario) {
			setHeader(s.rejects[s.find(s.rejects, s.input("c-1", "e4", 999))], wire.HeaderRejectReason, "duplicate")
		}, want{input: true, accepted: true, totals: true, rejected: map[string]int{"duplicate": 3, "conflict": 1}}},
		{"a rejection without reason", func(s *truthScenario) {
			dropHeader(s.rejects[s.find(s.rejects, s.input("c-1", "e4", 999))], wire.HeaderRejectReason)
		}, want{input: true, accepted: true, totals: true, rejected: map[string]int{"duplicate": 2, "conflict": 1, verify.NoReason: 1}}},
		{"a stale input accepted as well as rejected", func(s *truthScenario) {
			i := s.input("c-1", "e4", 999)
			extra := clone(s.out[s.find(s.out, s.input("c-1", "e3", 120))])
			setHeader(extra, wire.HeaderSource, wire.Source("in", s.in[i].Partition, s.in[i].Offset))
			s.out = append(s.out, extra)
		}, want{duplicates: 1, input: true, rejections: true, totals: true}},
		{"an output without source", func(s *truthScenario) {
			dropHeader(s.out[s.find(s.out, s.input("c-2", "e5", 10))], wire.HeaderSource)
		}, want{missing: 1, unexpected: 1, input: true, accepted: true, rejections: true, totals: true}},
		{"a source in another topic", func(s *truthScenario) {
			i := s.input("c-2", "e5", 10)
			setHeader(s.out[s.find(s.out, i)], wire.HeaderSource, wire.Source("other", s.in[i].Partition, s.in[i].Offset))
		}, want{missing: 1, unexpected: 1, input: true, accepted: true, rejections: true, totals: true}},
		{"a source past the input's end", func(s *truthScenario) {
			s.out = append(s.out, clone(s.out[s.find(s.out, s.input("c-1", "e3", 120))]))
			setHeader(s.out[len(s.out)-1], wire.HeaderSource, "in/0/99")
		}, want{unexpected: 1, input: true, rejections: true, totals: true}},
		{"a malformed source", func(s *truthScenario) {
			setHeader(s.rejects[0], wire.HeaderSource, "in/x/1")
		}, want{missing: 1, unexpected: 1, input: true, accepted: true, rejections: true, totals: true}},
		{"an output under another key", func(s *truthScenario) {
			s.out[s.find(s.out, s.input("c-3", "e7", 5))].Key = []byte("c-9")
		}, want{missing: 1, unexpected: 1, input: true, accepted: true, rejections: true,
			example: `"c-3": no output, want 5`}},
		{"an output value of four bytes", func(s *truthScenario) {
			s.out[s.find(s.out, s.input("c-3", "e7", 5))].Value = []byte{0, 0, 0, 5}
		}, want{missing: 1, unexpected: 1, input: true, accepted: true, rejections: true,
			example: `"c-3": last output is 4 bytes`}},
		{"a rejected value that is not the input's", func(s *truthScenario) {
			s.rejects[0].Value = []byte("{}")
		}, want{missing: 1, unexpected: 1, input: true, accepted: true, rejections: true, totals: true}},
		{"a wrong total", func(s *truthScenario) {
			s.out[s.find(s.out, s.input("c-2", "e6", 20))].Value = binary.BigEndian.AppendUint64(nil, 21)
		}, want{input: true, accepted: true, rejections: true, example: `"c-2": last output 21, want 20`}},
		{"a wrong intermediate total is not seen", func(s *truthScenario) {
			s.out[s.find(s.out, s.input("c-2", "e5", 10))].Value = binary.BigEndian.AppendUint64(nil, 11)
		}, good},
		{"a customer's outputs in two partitions", func(s *truthScenario) {
			r := s.out[s.find(s.out, s.input("c-2", "e6", 20))]
			r.Partition = 1 - r.Partition
		}, want{input: true, accepted: true, rejections: true, example: `"c-2": outputs in partitions`}},
		{"a customer the truth does not know", func(s *truthScenario) {
			delete(s.truth.Totals, "c-3")
		}, want{input: true, accepted: true, rejections: true, example: `"c-3": has outputs, no total in the truth`}},
		{"a customer of the truth without outputs", func(s *truthScenario) {
			s.truth.Totals["c-4"] = 1
		}, want{input: true, accepted: true, rejections: true, example: `"c-4": no output, want 1`}},
		{"another input count", func(s *truthScenario) {
			s.truth.EventsTotal++
		}, want{accepted: true, rejections: true, totals: true}},
		{"truth expects undecodable records", func(s *truthScenario) {
			s.truth.Undecodable = 1
		}, want{input: true, accepted: true, totals: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTruthScenario()
			tc.mod(s)
			in, out, rej := s.in, committed(s.out), committed(s.rejects)
			if s.reversed {
				slices.Reverse(in)
				slices.Reverse(out)
				slices.Reverse(rej)
			}
			rep := verify.MatchTruth(s.truth, "in", in, out, rej)
			w := tc.want
			if w.rejected == nil {
				w.rejected = map[string]int{"duplicate": 2, "conflict": 1, "stale": 1}
			}
			got := want{rep.Missing, rep.Duplicates, rep.Unexpected, rep.InputMatch, rep.AcceptedMatch,
				rep.RejectionsMatch, rep.TotalsMatch, rep.OK, rep.Rejected, ""}
			w.example = ""
			if !reflect.DeepEqual(got, w) {
				t.Errorf("report %+v\n got  %+v\n want %+v", rep, got, w)
			}
			if tc.want.example != "" && !strings.Contains(strings.Join(rep.TotalsExamples, "; "), tc.want.example) {
				t.Errorf("totals examples %q lack %q", rep.TotalsExamples, tc.want.example)
			}
			if rep.OK != strings.HasSuffix(rep.String(), ": ok") {
				t.Errorf("String() = %q with OK %v", rep.String(), rep.OK)
			}
		})
	}
}
