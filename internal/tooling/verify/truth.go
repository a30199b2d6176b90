package verify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/internal/tooling/gen"
	"github.com/onceflow/onceflow/internal/wire"
)

// NoReason is the key under which TruthReport.Rejected counts rejected
// records without a wire.HeaderRejectReason.
const NoReason = "(none)"

// maxExamples bounds TruthReport.TotalsExamples.
const maxExamples = 5

// TruthReport is the outcome of checking the orders example's output
// against the truth of its input (gen.Truth).
type TruthReport struct {
	// Input is the number of committed input records.
	Input int `json:"input"`
	// Output is the number of committed output records (accepted events).
	Output int `json:"output"`
	// Rejected counts the committed rejected records by their reason
	// header (NoReason when absent).
	Rejected map[string]int `json:"rejected"`
	// Missing counts input records with neither an output nor a rejected
	// record.
	Missing int `json:"missing"`
	// Duplicates counts extra copies across output and rejected records:
	// an input accounted for three times counts two.
	Duplicates int `json:"duplicates"`
	// Unexpected counts output and rejected records that account for no
	// input: no or an invalid wire.HeaderSource, a source outside the input
	// topic's records, a key other than the input's, an output value that
	// is not an 8-byte big-endian int64, or a rejected value other than
	// the input's.
	Unexpected int `json:"unexpected"`

	// ExpectedInput, ExpectedAccepted and ExpectedRejected are the
	// truth's events_total, accepted, and rejections by reason.
	ExpectedInput    int            `json:"expected_input"`
	ExpectedAccepted int            `json:"expected_accepted"`
	ExpectedRejected map[string]int `json:"expected_rejected"`

	// InputMatch: Input equals the truth's events_total.
	InputMatch bool `json:"input_match"`
	// AcceptedMatch: Output equals the truth's accepted.
	AcceptedMatch bool `json:"accepted_match"`
	// RejectionsMatch: Rejected equals ExpectedRejected (zero counts
	// aside).
	RejectionsMatch bool `json:"rejections_match"`
	// TotalsMatch: every customer in the truth's totals has, as its last
	// output (highest offset of the one partition its key is in), that
	// total, and no other key has an output.
	TotalsMatch bool `json:"totals_match"`
	// Customers is the number of customers in the truth's totals;
	// TotalsMismatched counts those whose last output differs or is
	// absent, keys with outputs the truth has no total for, and keys with
	// outputs in more than one partition. TotalsExamples describes up to
	// five of them, in key order.
	Customers        int      `json:"customers"`
	TotalsMismatched int      `json:"totals_mismatched"`
	TotalsExamples   []string `json:"totals_examples,omitempty"`

	// OK is true when every count matches and nothing is missing,
	// duplicated or unexpected.
	OK bool `json:"ok"`
}

// String is a readable summary on two lines.
func (r TruthReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "input %d (truth %d), accepted outputs %d (truth %d), rejected %s (truth %s)\n",
		r.Input, r.ExpectedInput, r.Output, r.ExpectedAccepted, formatReasons(r.Rejected), formatReasons(r.ExpectedRejected))
	fmt.Fprintf(&b, "missing %d, duplicates %d, unexpected %d, totals of %d customers: %d mismatched",
		r.Missing, r.Duplicates, r.Unexpected, r.Customers, r.TotalsMismatched)
	if len(r.TotalsExamples) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.TotalsExamples, "; "))
	}
	if r.OK {
		b.WriteString(": ok")
		return b.String()
	}
	var failed []string
	for _, c := range []struct {
		ok   bool
		what string
	}{
		{r.InputMatch, "input count"}, {r.AcceptedMatch, "accepted count"},
		{r.RejectionsMatch, "rejections"}, {r.TotalsMatch, "totals"},
		{r.Missing == 0, "missing"}, {r.Duplicates == 0, "duplicates"}, {r.Unexpected == 0, "unexpected"},
	} {
		if !c.ok {
			failed = append(failed, c.what)
		}
	}
	fmt.Fprintf(&b, ": FAILED (%s)", strings.Join(failed, ", "))
	return b.String()
}

func formatReasons(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// CheckTruth reads the input, output and rejected-records topics
// read_committed to their ends (ReadAll) and checks them against truth
// with MatchTruth. extra are client options, as for ReadAll.
func CheckTruth(ctx context.Context, brokers []string, truth gen.Truth, input, output, rejected string, extra ...kgo.Opt) (TruthReport, error) {
	topics := []string{input, output, rejected}
	recs := make([][]Record, len(topics))
	g, gctx := errgroup.WithContext(ctx)
	for i, topic := range topics {
		g.Go(func() (err error) {
			recs[i], err = ReadAll(gctx, brokers, topic, extra...)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return TruthReport{}, err
	}
	return MatchTruth(truth, input, recs[0], recs[1], recs[2]), nil
}

// MatchTruth is the pure part of CheckTruth: in, out and rejected are the
// committed records of the topics inputTopic, the output topic and the
// rejected-records topic. Every output and rejected record must name its
// input record in wire.HeaderSource; the last output per key must be the
// customer's total.
func MatchTruth(truth gen.Truth, inputTopic string, in, out, rejected []Record) TruthReport {
	type pos struct {
		p int32
		o int64
	}
	inputs := make(map[pos]Record, len(in))
	for _, r := range in {
		inputs[pos{r.Partition, r.Offset}] = r
	}
	rep := TruthReport{
		Input:            len(in),
		Output:           len(out),
		Rejected:         map[string]int{},
		ExpectedInput:    truth.EventsTotal,
		ExpectedAccepted: truth.Accepted,
		ExpectedRejected: truth.Rejections(),
		Customers:        len(truth.Totals),
	}
	copies := make(map[pos]int, len(in))
	// account counts r for its input; valid checks r against that input.
	account := func(r Record, valid func(src Record) bool) {
		topic, p, o, ok := wire.ParseSource(r.Headers[wire.HeaderSource])
		if !ok || topic != inputTopic {
			rep.Unexpected++
			return
		}
		src, ok := inputs[pos{p, o}]
		if !ok || !bytes.Equal(r.Key, src.Key) || !valid(src) {
			rep.Unexpected++
			return
		}
		copies[pos{p, o}]++
	}
	for _, r := range out {
		account(r, func(Record) bool { return len(r.Value) == 8 })
	}
	for _, r := range rejected {
		reason, ok := r.Headers[wire.HeaderRejectReason]
		if !ok || reason == "" {
			reason = NoReason
		}
		rep.Rejected[reason]++
		account(r, func(src Record) bool { return bytes.Equal(r.Value, src.Value) })
	}
	for k := range inputs {
		switch n := copies[k]; {
		case n == 0:
			rep.Missing++
		case n > 1:
			rep.Duplicates += n - 1
		}
	}

	rep.InputMatch = rep.Input == truth.EventsTotal
	rep.AcceptedMatch = rep.Output == truth.Accepted
	rep.RejectionsMatch = maps.Equal(nonZero(rep.Rejected), nonZero(rep.ExpectedRejected))
	rep.TotalsMismatched, rep.TotalsExamples = matchTotals(truth.Totals, out)
	rep.TotalsMatch = rep.TotalsMismatched == 0
	rep.OK = rep.InputMatch && rep.AcceptedMatch && rep.RejectionsMatch && rep.TotalsMatch &&
		rep.Missing == 0 && rep.Duplicates == 0 && rep.Unexpected == 0
	return rep
}

func nonZero(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// matchTotals compares the last output per key (by offset, within the
// key's partition) with want, and describes up to maxExamples mismatches.
func matchTotals(want map[string]int64, out []Record) (mismatched int, examples []string) {
	sorted := slices.Clone(out)
	slices.SortStableFunc(sorted, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	type last struct {
		value      []byte
		partitions []int32
	}
	got := map[string]*last{}
	for _, r := range sorted {
		l := got[string(r.Key)]
		if l == nil {
			l = &last{}
			got[string(r.Key)] = l
		}
		if !slices.Contains(l.partitions, r.Partition) {
			l.partitions = append(l.partitions, r.Partition)
		}
		l.value = r.Value
	}

	problems := map[string]string{}
	for key, w := range want {
		l := got[key]
		switch {
		case l == nil:
			problems[key] = fmt.Sprintf("%q: no output, want %d", key, w)
		case len(l.partitions) > 1:
			problems[key] = fmt.Sprintf("%q: outputs in partitions %v, want one", key, l.partitions)
		case len(l.value) != 8:
			problems[key] = fmt.Sprintf("%q: last output is %d bytes, want an 8-byte int64 %d", key, len(l.value), w)
		default:
			if v := int64(binary.BigEndian.Uint64(l.value)); v != w {
				problems[key] = fmt.Sprintf("%q: last output %d, want %d", key, v, w)
			}
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			problems[key] = fmt.Sprintf("%q: has outputs, no total in the truth", key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(problems)) {
		if len(examples) == maxExamples {
			break
		}
		examples = append(examples, problems[key])
	}
	return len(problems), examples
}
