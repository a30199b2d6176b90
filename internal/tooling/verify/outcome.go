package verify

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/internal/wire"
)

// Spec says what an outcome check reads: the topics of one application.
type Spec struct {
	// Inputs are the topics the application consumes (not its repartition
	// or through topics).
	Inputs []string `json:"inputs"`
	// Outputs are the topics it writes, outbox topics included.
	Outputs []string `json:"outputs"`
	// Windowed are the outputs (among Outputs) written downstream of a
	// windowed aggregation: a window's result names the record that
	// closed the window, not an input of its own, so these records are
	// counted apart and give no input an outcome.
	Windowed []string `json:"windowed,omitempty"`
	// Rejected is the application's rejected-records topic
	// ("<app-id>-rejected"); empty: none. A topic not yet created reads
	// as empty.
	Rejected string `json:"rejected,omitempty"`
	// MayDrop are the inputs whose records may rightly have no outcome:
	// every path from them to an output passes a stage that may forward
	// nothing (a filter, a flat-map, a process stage) or a windowed
	// aggregation.
	MayDrop []string `json:"may_drop,omitempty"`
	// Required are, per input topic, the outputs every record of it
	// reaches unless a stage rejects it: one output of a fan-out lost is
	// a loss even when the record's other outputs are there.
	Required map[string][]string `json:"required,omitempty"`
	// AtMost are, per input topic, the output topics a record of it
	// reaches through stages that forward at most one record each (no
	// flat-map or process stage on the way), and how many records it
	// writes there at most: one per path. More is a double, whatever the
	// values (a replay on state that already holds the record writes
	// another value).
	AtMost map[string]map[string]int `json:"at_most,omitempty"`
	// Group is the application's consumer group; empty: none. When set,
	// Outcomes reads its committed offsets before the topics, and an
	// input at or past them without an outcome is pending (not consumed
	// yet: a replica stopped with lag, or still running), not missing.
	Group string `json:"group,omitempty"`
	// Ledgers are the delivery ledgers of the outbox topics among
	// Outputs (outbox topic to ledger changelog). The sink runner purges
	// an outbox below the deliveries it settled; the ledger keeps one
	// entry per delivery, with its lineage, so a purged delivery is still
	// its input's outcome.
	Ledgers map[string]string `json:"ledgers,omitempty"`
}

// TopicCount is what one output topic held.
type TopicCount struct {
	Topic string `json:"topic"`
	// Records are its committed data records.
	Records int `json:"records"`
	// Windowed and Punctuated are its records counted apart: results of a
	// windowed aggregation, outputs of a punctuator.
	Windowed   int `json:"windowed,omitempty"`
	Punctuated int `json:"punctuated,omitempty"`
	// Unexpected are its records whose lineage names no committed input.
	Unexpected int `json:"unexpected,omitempty"`
	// Purged are, of an outbox, the deliveries its ledger holds whose
	// records the sink runner purged (counted in Records).
	Purged int `json:"purged,omitempty"`
	// Commands are, of an outbox, the operators' commands to its sink
	// runner (redrive, resolve): records with a delivery's key, payload
	// and lineage that are no outcome (not in Records).
	Commands int `json:"commands,omitempty"`
}

// OutcomeReport is the outcome of an outcome check: every committed input
// record has an outcome (outputs that name it in their lineage, however
// many and whatever their values, or a rejection), and no outcome twice.
type OutcomeReport struct {
	// Input counts the committed input records, Output the output records
	// and Rejections the records of the rejected topic.
	Input      int `json:"input"`
	Output     int `json:"output"`
	Rejections int `json:"rejections"`
	// WithOutput counts inputs with at least one output; RejectedOnly
	// those whose only outcome is a rejection.
	WithOutput   int `json:"with_output"`
	RejectedOnly int `json:"rejected_only"`
	// Missing counts inputs without an outcome on a topic whose records
	// always have one; NoOutcome those on a topic that may drop records
	// (Spec.MayDrop), which do not fail the check.
	Missing   int `json:"missing"`
	NoOutcome int `json:"no_outcome"`
	// Pending counts inputs without an outcome at or past the group's
	// committed offsets (Spec.Group): not consumed yet.
	Pending int `json:"pending,omitempty"`
	// Partial counts inputs, none of whose outcomes is a rejection, with
	// outputs on some but not all of the topics they always reach
	// (Spec.Required): a fan-out's output lost.
	Partial int `json:"partial"`
	// Doubled counts inputs with an outcome twice (the same output, or the
	// same rejection, more than once); Extra the copies beyond the first.
	Doubled int `json:"doubled"`
	Extra   int `json:"extra"`
	// Unexpected counts outputs and rejections whose lineage is missing,
	// invalid, or names no committed record of an input topic.
	Unexpected int `json:"unexpected"`
	// InputGone counts outputs and rejections whose lineage names an
	// offset below the first record read of its input partition: an
	// input deleted since (retention, DeleteRecords), not a defect of the
	// run.
	InputGone int `json:"input_gone,omitempty"`
	// Windowed and Punctuated count the outputs reported apart (they
	// have no single input); WindowedDoubled the windowed results written
	// more than once (same topic, key, value and lineage).
	Windowed        int `json:"windowed"`
	WindowedDoubled int `json:"windowed_doubled"`
	Punctuated      int `json:"punctuated"`
	// Topics are the output topics' counts.
	Topics []TopicCount `json:"topics"`
	// OK is true when nothing is missing, doubled or unexpected.
	OK bool `json:"ok"`
}

// String is a short summary: one line of counts and a verdict.
func (r OutcomeReport) String() string {
	verdict := "ok: every input has its outcome once"
	if r.NoOutcome > 0 {
		verdict = "ok: every input that must have an outcome has it once"
	}
	if !r.OK {
		verdict = "FAILED"
	}
	s := fmt.Sprintf("input %d, output %d, rejections %d: with output %d, rejected only %d, missing %d, doubled %d, unexpected %d",
		r.Input, r.Output, r.Rejections, r.WithOutput, r.RejectedOnly, r.Missing, r.Doubled, r.Unexpected)
	if r.Partial > 0 {
		s += fmt.Sprintf(", partial %d (an output of a fan-out missing)", r.Partial)
	}
	if r.NoOutcome > 0 {
		s += fmt.Sprintf(", no outcome %d (topics that may drop records)", r.NoOutcome)
	}
	if r.Pending > 0 {
		s += fmt.Sprintf(", pending %d (not consumed yet by the group)", r.Pending)
		if r.OK {
			verdict = "ok: every consumed input has its outcome once"
		}
	}
	if r.InputGone > 0 {
		s += fmt.Sprintf("; apart: input gone %d (outcomes of inputs deleted since)", r.InputGone)
	}
	if r.Windowed > 0 || r.Punctuated > 0 {
		s += fmt.Sprintf("; apart: windowed %d (doubled %d), punctuated %d", r.Windowed, r.WindowedDoubled, r.Punctuated)
	}
	return s + ": " + verdict
}

// Outcomes reads the topics of spec read_committed to their ends and
// checks them with MatchOutcomes. extra are client options, as for ReadAll.
func Outcomes(ctx context.Context, brokers []string, spec Spec, extra ...kgo.Opt) (OutcomeReport, error) {
	if len(spec.Inputs) == 0 || len(spec.Outputs) == 0 && spec.Rejected == "" {
		return OutcomeReport{}, errors.New("verify: no input topic, or neither an output nor a rejected topic")
	}
	var committed kadm.OffsetResponses
	if spec.Group != "" {
		// Before the topics: every input below these offsets was
		// consumed, its outcome committed with them.
		cl, err := newClient(ctx, brokers, extra)
		if err != nil {
			return OutcomeReport{}, err
		}
		committed, err = kadm.NewClient(cl).FetchOffsets(ctx, spec.Group)
		cl.Close()
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return OutcomeReport{}, fmt.Errorf("verify: committed offsets of group %q: %w", spec.Group, err)
		}
	}
	in := make([][]Record, len(spec.Inputs))
	out := make([][]Record, len(spec.Outputs))
	var rejected []Record
	g, gctx := errgroup.WithContext(ctx)
	for i, topic := range spec.Inputs {
		g.Go(func() (err error) {
			in[i], err = ReadAll(gctx, brokers, topic, extra...)
			return err
		})
	}
	for i, topic := range spec.Outputs {
		g.Go(func() (err error) {
			out[i], err = ReadAll(gctx, brokers, topic, extra...)
			return err
		})
	}
	if spec.Rejected != "" {
		g.Go(func() (err error) {
			rejected, err = ReadAll(gctx, brokers, spec.Rejected, extra...)
			if errors.Is(err, ErrTopicNotFound) {
				return nil // created with the first replica; none yet
			}
			return err
		})
	}
	ledgers := make([][]Record, len(spec.Outputs))
	for i, topic := range spec.Outputs {
		ledger, ok := spec.Ledgers[topic]
		if !ok {
			continue
		}
		g.Go(func() (err error) {
			ledgers[i], err = ReadAll(gctx, brokers, ledger, extra...)
			if errors.Is(err, ErrTopicNotFound) {
				return nil // no delivery settled yet
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return OutcomeReport{}, err
	}
	for i, topic := range spec.Outputs {
		out[i] = append(out[i], purged(topic, out[i], ledgers[i])...)
	}
	var consumed func(Record) bool
	if spec.Group != "" {
		consumed = func(r Record) bool {
			o, ok := committed.Lookup(r.Topic, r.Partition)
			return ok && o.Err == nil && r.Offset < o.At
		}
	}
	return matchOutcomes(spec, slices.Concat(in...), slices.Concat(out...), rejected, consumed), nil
}

// purged returns an output record for each delivery the ledger of outbox
// holds whose outbox record is gone (purged by the sink runner once
// settled): the delivery's lineage and idempotency key, no key or value,
// partition -1. A ledger record's key is the delivery's idempotency key,
// its value the entry (JSON with the lineage as "source"); the last
// record of a key is its entry.
func purged(outbox string, present, ledger []Record) []Record {
	there := make(map[string]bool, len(present))
	for _, r := range present {
		there[r.Headers[wire.HeaderIdempotencyKey]] = true
	}
	source := map[string]string{}
	var keys []string
	for _, r := range ledger {
		var e struct {
			Source string `json:"source"`
		}
		k := string(r.Key)
		if r.Value == nil || json.Unmarshal(r.Value, &e) != nil || e.Source == "" {
			delete(source, k)
			continue
		}
		if _, seen := source[k]; !seen {
			keys = append(keys, k)
		}
		source[k] = e.Source
	}
	var out []Record
	for _, k := range keys {
		src, ok := source[k]
		if !ok || there[k] {
			continue
		}
		out = append(out, Record{Topic: outbox, Partition: -1, Offset: -1,
			Headers: map[string]string{wire.HeaderSource: src, wire.HeaderIdempotencyKey: k}})
	}
	return out
}

// inputKey names one input record.
type inputKey struct {
	topic     string
	partition int32
	offset    int64
}

// MatchOutcomes matches the committed records of spec's output topics and
// of its rejected topic to its input records by their wire.HeaderSource. It is
// pure. An outcome is one output record (its topic, partition, key, value
// and idempotency key, the lineage it names) or one rejection (its reason,
// node, key and value); the same outcome twice is a double. A fan-out that
// writes the same record twice for one input, or a gate that rejects two
// identical records of one fan-out, reads as a double too.
func MatchOutcomes(spec Spec, in, out, rejected []Record) OutcomeReport {
	return matchOutcomes(spec, in, out, rejected, nil)
}

// matchOutcomes is MatchOutcomes; consumed, when not nil, says which
// inputs the group has consumed: the others without an outcome are
// pending.
func matchOutcomes(spec Spec, in, out, rejected []Record, consumed func(Record) bool) OutcomeReport {
	rep := OutcomeReport{Input: len(in), Output: len(out), Rejections: len(rejected)}
	inputs := make(map[string]bool, len(spec.Inputs))
	for _, t := range spec.Inputs {
		inputs[t] = true
	}
	windowed := map[string]bool{}
	for _, t := range spec.Windowed {
		windowed[t] = true
	}
	known := make(map[inputKey]bool, len(in))
	pending := map[inputKey]bool{}
	// lowest is the first offset read of each input partition: offsets
	// below it were deleted (a read starts at the log start).
	type topicPartition struct {
		topic     string
		partition int32
	}
	lowest := map[topicPartition]int64{}
	for _, r := range in {
		known[inputKey{r.Topic, r.Partition, r.Offset}] = true
		if consumed != nil && !consumed(r) {
			pending[inputKey{r.Topic, r.Partition, r.Offset}] = true
		}
		tp := topicPartition{r.Topic, r.Partition}
		if lo, ok := lowest[tp]; !ok || r.Offset < lo {
			lowest[tp] = r.Offset
		}
	}
	gone := func(r Record) bool {
		topic, p, o, parsed := wire.ParseSource(r.Headers[wire.HeaderSource])
		lo, ok := lowest[topicPartition{topic, p}]
		return parsed && inputs[topic] && ok && o >= 0 && o < lo
	}
	type outcomes struct {
		outputs, rejections int
		seen                map[string]int
		topics              map[string]int
		identical           map[string]int
	}
	of := make(map[inputKey]*outcomes, len(in))
	windowSeen := map[string]int{}
	topics := map[string]*TopicCount{}
	for _, t := range spec.Outputs {
		topics[t] = &TopicCount{Topic: t}
	}
	// lineage classifies a record by its wire.HeaderSource: a punctuator's, an
	// input record's, or neither (unexpected).
	lineage := func(r Record) (k inputKey, punctuated, ok bool) {
		src := r.Headers[wire.HeaderSource]
		if strings.HasPrefix(src, wire.PunctuatorPrefix) {
			return inputKey{}, true, false
		}
		topic, p, o, parsed := wire.ParseSource(src)
		k = inputKey{topic, p, o}
		return k, false, parsed && inputs[topic] && known[k]
	}
	add := func(k inputKey, topic, sig string, rejection bool) {
		o := of[k]
		if o == nil {
			o = &outcomes{seen: map[string]int{}, topics: map[string]int{}, identical: map[string]int{}}
			of[k] = o
		}
		if rejection {
			o.rejections++
		} else {
			o.outputs++
			o.topics[topic]++
		}
		o.seen[sig]++
		if o.seen[sig] > 1 {
			o.identical[topic]++
		}
	}
	for _, r := range out {
		tc := topics[r.Topic]
		if tc == nil {
			tc = &TopicCount{Topic: r.Topic}
			topics[r.Topic] = tc
		}
		if r.Headers[wire.HeaderSinkCommand] != "" {
			tc.Commands++
			rep.Output--
			continue
		}
		tc.Records++
		if r.Partition < 0 {
			tc.Purged++
		}
		k, punctuated, ok := lineage(r)
		switch {
		case punctuated:
			tc.Punctuated++
			rep.Punctuated++
		case !ok && gone(r):
			rep.InputGone++
		case !ok:
			tc.Unexpected++
			rep.Unexpected++
		case windowed[r.Topic]:
			tc.Windowed++
			rep.Windowed++
			windowSeen[signature(r.Topic, r.Partition, r.Key, r.Value, r.Headers[wire.HeaderSource])]++
		default:
			add(k, r.Topic, signature(r.Topic, r.Partition, r.Key, r.Value, r.Headers[wire.HeaderIdempotencyKey]), false)
		}
	}
	for _, r := range rejected {
		k, punctuated, ok := lineage(r)
		switch {
		case punctuated:
			rep.Punctuated++
		case r.Headers[wire.HeaderRejectedRecord] != "":
			// A window's result rejected as itself: it is not its
			// lineage's input record.
			rep.Windowed++
		case !ok && gone(r):
			rep.InputGone++
		case !ok:
			rep.Unexpected++
		default:
			add(k, "", signature("", 0, r.Key, r.Value, r.Headers[wire.HeaderRejectReason], r.Headers[wire.HeaderRejectNode]), true)
		}
	}
	mayDrop := map[string]bool{}
	for _, t := range spec.MayDrop {
		mayDrop[t] = true
	}
	for k := range known {
		o := of[k]
		switch {
		case o == nil && pending[k]:
			rep.Pending++
			continue
		case o == nil && mayDrop[k.topic]:
			rep.NoOutcome++
			continue
		case o == nil:
			rep.Missing++
			continue
		case o.outputs > 0:
			rep.WithOutput++
			// A pending input's outputs may still be on their way (at
			// least once, outputs are written before the offsets).
			if o.rejections == 0 && !pending[k] && slices.ContainsFunc(spec.Required[k.topic], func(t string) bool { return o.topics[t] == 0 }) {
				rep.Partial++
			}
		default:
			rep.RejectedOnly++
		}
		// Copies beyond the first of one outcome, or beyond the bound
		// of a topic (spec.AtMost) when that is more.
		extra := 0
		for t, n := range o.identical {
			if max, ok := spec.AtMost[k.topic][t]; ok && o.topics[t]-max > n {
				n = o.topics[t] - max
			}
			extra += n
		}
		for t, max := range spec.AtMost[k.topic] {
			if o.identical[t] == 0 && o.topics[t] > max {
				extra += o.topics[t] - max
			}
		}
		doubled := extra > 0
		rep.Extra += extra
		if doubled {
			rep.Doubled++
		}
	}
	for _, n := range windowSeen {
		if n > 1 {
			rep.WindowedDoubled += n - 1
		}
	}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		rep.Topics = append(rep.Topics, *topics[t])
	}
	rep.OK = rep.Missing == 0 && rep.Partial == 0 && rep.Doubled == 0 && rep.Unexpected == 0 && rep.WindowedDoubled == 0
	return rep
}

// signature is one outcome's identity: its parts, each prefixed by its
// length so that no two lists of parts read alike.
func signature(topic string, partition int32, key, value []byte, more ...string) string {
	var b []byte
	part := func(p []byte) {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	part([]byte(topic))
	b = binary.AppendVarint(b, int64(partition))
	part(key)
	part(value)
	for _, m := range more {
		part([]byte(m))
	}
	return string(b)
}
