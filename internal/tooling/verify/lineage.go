package verify

import (
	"bytes"
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/internal/wire"
)

// Report is the outcome of a lineage check.
type Report struct {
	// Input and Output are the committed data records read from each topic.
	Input  int `json:"input"`
	Output int `json:"output"`
	// Missing counts input records with no output.
	Missing int `json:"missing"`
	// Duplicates counts extra copies: an input with three outputs counts two.
	Duplicates int `json:"duplicates"`
	// Unexpected counts outputs with no or an invalid wire.HeaderSource, one
	// naming a record that is not in the input topic, or one whose value
	// differs from its input's value.
	Unexpected int `json:"unexpected"`
	// OK is true when nothing is missing, duplicated or unexpected.
	OK bool `json:"ok"`
}

// String is a one-line summary.
func (r Report) String() string {
	verdict := "ok: every input has exactly one output"
	if !r.OK {
		verdict = "FAILED"
	}
	return fmt.Sprintf("input %d, output %d, missing %d, duplicates %d, unexpected %d: %s",
		r.Input, r.Output, r.Missing, r.Duplicates, r.Unexpected, verdict)
}

// Lineage reads the input and output topics read_committed to their ends
// and matches them with Match. extra are client options, as for ReadAll.
func Lineage(ctx context.Context, brokers []string, input, output string, extra ...kgo.Opt) (Report, error) {
	var in, out []Record
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		in, err = ReadAll(gctx, brokers, input, extra...)
		return err
	})
	g.Go(func() (err error) {
		out, err = ReadAll(gctx, brokers, output, extra...)
		return err
	})
	if err := g.Wait(); err != nil {
		return Report{}, err
	}
	return Match(input, in, out), nil
}

// Match matches output records to the records of inputTopic by their
// wire.HeaderSource, and requires each output's value to equal its input's (the
// copy topology). It is pure: in and out are the topics' committed records.
func Match(inputTopic string, in, out []Record) Report {
	return match(inputTopic, in, out, true)
}

// MatchSources is Match for topologies that transform values: outputs are
// matched by their wire.HeaderSource alone, each input expected exactly once.
func MatchSources(inputTopic string, in, out []Record) Report {
	return match(inputTopic, in, out, false)
}

func match(inputTopic string, in, out []Record, sameValue bool) Report {
	type key struct {
		p int32
		o int64
	}
	values := make(map[key][]byte, len(in))
	for _, r := range in {
		values[key{r.Partition, r.Offset}] = r.Value
	}
	copies := make(map[key]int, len(in))
	rep := Report{Input: len(in), Output: len(out)}
	for _, r := range out {
		topic, p, o, ok := wire.ParseSource(r.Headers[wire.HeaderSource])
		if !ok || topic != inputTopic {
			rep.Unexpected++
			continue
		}
		k := key{p, o}
		v, ok := values[k]
		if !ok || sameValue && !bytes.Equal(v, r.Value) {
			rep.Unexpected++
			continue
		}
		copies[k]++
	}
	for k := range values {
		switch n := copies[k]; {
		case n == 0:
			rep.Missing++
		case n > 1:
			rep.Duplicates += n - 1
		}
	}
	rep.OK = rep.Missing == 0 && rep.Duplicates == 0 && rep.Unexpected == 0
	return rep
}
